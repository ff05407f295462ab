"""Training the world model: the TD-MPC2 losses over H-step windows, as one jitted update.

Per window (obs [B, H+1, o], cond [B, H, c], reward [B, H], terminated [B, H])
the latent is rolled out from encode(o_0) under the stored conditioning, and
step t is weighted by ρ^t (normalised so the weights sum to one):

- consistency: ‖ẑ_{t+1} − sg(encode(o_{t+1}))‖² (target: online encoder behind
  a stop-gradient, or its EMA copy);
- reward: two-hot cross-entropy of reward(ẑ_t, c_t) against r_t;
- value: each Q head's cross-entropy against the SARSA target
  r_t + γ(1 − d_t)·mean Q_target(sg(encode(o_{t+1})), c_{t+1}); the data's own
  next conditioning stands in for a policy, so the ensemble values the data's
  behaviour. The last step has no next conditioning and is masked unless it
  terminated. The heads' mean (not TD-MPC2's min of two) is the target: with
  no maximisation over actions there is no overestimation to guard against.
  The router retrains a copy of this ensemble for itself;
- termination: binary cross-entropy of terminated(ẑ_{t+1}) against d_t;
- decoder: ‖decode(ẑ_t) − normalised o_t‖².
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from metaworld_x.errors import UserError
from metaworld_x.world_model.buffer import ReplayBuffer
from metaworld_x.world_model.config import WorldModelConfig
from metaworld_x.world_model.model import WorldModel, WorldModelParams
from metaworld_x.world_model.networks import ema, two_hot_cross_entropy


@struct.dataclass
class WorldModelTrainState:
    params: WorldModelParams
    opt_state: Any
    step: jax.Array


def make_optimizer(config: WorldModelConfig) -> optax.GradientTransformation:
    # flatten: one Adam over a single vector, not one per leaf, so the compiled update is smaller.
    return optax.flatten(optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate)))


def horizon_weights(horizon: int, rho: float) -> jax.Array:
    """ρ^t for t < horizon, normalised to sum to one: [H]."""
    w = rho ** jnp.arange(horizon, dtype=jnp.float32)
    return w / jnp.sum(w)


def world_model_loss(nets, params: WorldModelParams, batch: dict, model: WorldModel):
    """Total loss and named terms for one batch of windows; differentiable in `nets`."""
    config = model.config
    params = params.replace(nets=nets)
    obs, cond, reward, done = batch["obs"], batch["cond"], batch["reward"], batch["terminated"]
    horizon = cond.shape[1]
    rho = horizon_weights(horizon, config.rho)

    next_encoded = jax.lax.stop_gradient(model.encode(params, obs[:, 1:]))
    if config.target_encoder == "ema":
        next_target = jax.lax.stop_gradient(model.encode(params, obs[:, 1:], target=True))
    else:
        next_target = next_encoded
    zs = model.rollout(params, model.encode(params, obs[:, 0]), cond)  # [B, H+1, z]
    consistency = jnp.mean((zs[:, 1:] - next_target) ** 2, axis=(0, 2))

    reward_ce = jnp.mean(two_hot_cross_entropy(model.reward_logits(params, zs[:, :-1], cond), reward, config.value_range), axis=0)

    next_cond = jnp.concatenate([cond[:, 1:], cond[:, -1:]], axis=1)
    bootstrap = jnp.mean(model.Q(params, next_encoded, next_cond, target=True), axis=0)
    td_target = jax.lax.stop_gradient(reward + config.discount * (1 - done) * bootstrap)
    has_target = jnp.concatenate([jnp.ones_like(done[:, :-1]), done[:, -1:]], axis=1)
    q_ce = two_hot_cross_entropy(model.Q_logits(params, zs[:, :-1], cond), td_target, config.value_range)  # [E, B, H]
    value_ce = jnp.sum(jnp.mean(q_ce, axis=0) * has_target, axis=0) / jnp.maximum(jnp.sum(has_target, axis=0), 1)

    logits = model.terminated_logit(params, zs[:, 1:])
    termination = jnp.mean(optax.sigmoid_binary_cross_entropy(logits, done), axis=0)

    decoded = model.decode(params, zs)
    decoder = jnp.mean((decoded - model.normalise(params, obs)) ** 2, axis=(0, 2))
    decoder = decoder[:-1] * 0.5 + decoder[1:] * 0.5  # H + 1 latents onto the H ρ-weighted steps

    terms = {
        "consistency": jnp.sum(rho * consistency),
        "reward": jnp.sum(rho * reward_ce),
        "value": jnp.sum(rho * value_ce),
        "termination": jnp.sum(rho * termination),
        "decoder": jnp.sum(rho * decoder),
    }
    total = (config.consistency_coef * terms["consistency"] + config.reward_coef * terms["reward"]
             + config.value_coef * terms["value"] + config.termination_coef * terms["termination"]
             + config.decoder_coef * terms["decoder"])
    metrics = {f"world_model/{k}": v for k, v in terms.items()}
    metrics["world_model/total"] = total
    return total, metrics


def make_update(model: WorldModel):
    """update(state, batch) -> (state, metrics); pure. train_world_model scans it over chunks of batches."""
    config = model.config
    optimizer = make_optimizer(config)
    grad_fn = jax.value_and_grad(world_model_loss, has_aux=True)

    def update(state: WorldModelTrainState, batch: dict):
        params = state.params
        (_, metrics), grads = grad_fn(params.nets, params, batch, model)
        updates, opt_state = optimizer.update(grads, state.opt_state, params.nets)
        nets = optax.apply_updates(params.nets, updates)
        params = params.replace(
            nets=nets,
            target_q=ema(params.target_q, nets.q, config.target_tau),
            target_encoder=ema(params.target_encoder, nets.encoder, config.target_tau),
        )
        metrics["world_model/grad_norm"] = optax.tree.norm(grads)
        return WorldModelTrainState(params, opt_state, state.step + 1), metrics

    return update


def init_train_state(model: WorldModel, key: jax.Array, obs_mean=None, obs_std=None) -> WorldModelTrainState:
    params = _jitted_init(model)(key, obs_mean, obs_std)
    return WorldModelTrainState(params, make_optimizer(model.config).init(params.nets), jnp.zeros((), jnp.int32))


@functools.lru_cache(maxsize=8)
def _jitted_init(model: WorldModel):
    return jax.jit(model.init, compiler_options={"xla_backend_optimization_level": 0})  # runs once; compile fast


@functools.lru_cache(maxsize=8)
def _compiled_chunk(model: WorldModel):
    """scan(update) over a leading axis of batches, jitted once per architecture."""
    update = make_update(model)
    return jax.jit(lambda state, batches: jax.lax.scan(update, state, batches), compiler_options=model.config.compiler_options)


def train_world_model(
    config: WorldModelConfig, buffer: ReplayBuffer, key: jax.Array, steps: int, params: WorldModelParams | None = None
) -> tuple[WorldModelParams, dict[str, list[float]]]:
    """Train for `steps` gradient steps (rounded up to a multiple of `config.log_every`) on windows from `buffer`.

    Returns params and the metric history.

    history holds one entry per `config.log_every` steps (each the mean over
    those steps) under the names of `world_model_loss`, plus 'step'. Pass
    params from an earlier call to continue training them (with a fresh
    optimiser state, and their own observation statistics); otherwise the
    statistics are taken from the buffer.
    """
    if steps <= 0:
        raise UserError(f"steps must be positive, got {steps}")
    model = WorldModel(config, buffer.obs_size, buffer.cond_size)
    init_key, sample_key = jax.random.split(key)
    if params is None:
        mean, std = buffer.obs_statistics()
        state = init_train_state(model, init_key, mean, std)
    else:
        state = WorldModelTrainState(params, make_optimizer(config).init(params.nets), jnp.zeros((), jnp.int32))
    rng = np.random.default_rng(int(jax.random.randint(sample_key, (), 0, 2**31 - 1)))
    chunk = _compiled_chunk(model)
    history: dict[str, list[float]] = {"step": []}
    done = 0
    while done < steps:
        # always a full chunk: one compiled shape per architecture (steps round up to a multiple of log_every)
        count = config.log_every
        windows = [buffer.sample(config.batch_size, config.horizon, rng) for _ in range(count)]
        batches = {k: np.stack([w[k] for w in windows]) for k in ("obs", "cond", "reward", "terminated")}
        state, metrics = chunk(state, batches)
        done += count
        history["step"].append(done)
        for name, values in metrics.items():
            history.setdefault(name, []).append(float(np.mean(values)))
        if not np.isfinite(history["world_model/total"][-1]):
            raise UserError(
                f"world-model loss became non-finite by step {done}; terms: "
                + ", ".join(f"{k}={v[-1]:.3g}" for k, v in history.items() if k != "step")
                + "; lower learning_rate or check the buffer's rewards"
            )
    return state.params, history
