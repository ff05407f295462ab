"""Router training state, the update for each configuration, and the host-side loop that guards it.

`make_router_update(router, model)` picks the objective from the config:
imagination in the world model (use_world_model), REINFORCE on real rollouts
(not use_world_model), or nothing at all (fixed_expert). Every update
multiplies vlm_weight by vlm_decay, so after n updates it is w0·decay^n.
"""

import functools
from typing import Any, Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from metaworld_x.errors import UserError
from metaworld_x.routing.imagination import make_imagination_update
from metaworld_x.routing.model_free import make_model_free_update
from metaworld_x.routing.network import Router, RouterParams
from metaworld_x.routing.prior import check_prior
from metaworld_x.world_model.model import WorldModel, WorldModelParams


@struct.dataclass
class RouterState:
    """Everything a router update changes."""

    params: RouterParams
    opt_state: Any
    critic: Any  # Q-ensemble parameters (world model layout); {} when model-free
    target_critic: Any
    critic_opt_state: Any
    anchor: RouterParams  # the router the stage began from: the centre of the trust region
    vlm_weight: jax.Array  # current weight of KL(prior ‖ router)
    return_scale: jax.Array  # running spread of imagined returns
    step: jax.Array
    key: jax.Array


def init_router_state(
    router: Router, key: jax.Array, model: WorldModel | None = None, wm_params: WorldModelParams | None = None,
    obs_mean=None, obs_std=None, prior=None,
) -> RouterState:
    """Fresh state. With use_world_model the router shares the world model's observation statistics
    and its critic starts as a copy of the world model's Q ensemble; prior [K] (with use_vlm) sets the starting weights."""
    config = router.config
    init_key, state_key = jax.random.split(key)
    critic: Any = {}
    if config.use_world_model and config.fixed_expert is None:
        if model is None or wm_params is None:
            raise UserError("use_world_model=True needs a trained world model (model and wm_params); or set use_world_model=False")
        if model.obs_size != router.obs_size or model.cond_size != router.num_experts:
            raise UserError(
                f"the world model (obs {model.obs_size}, conditioning {model.cond_size}) does not fit the router"
                f" (obs {router.obs_size}, {router.num_experts} experts); train it on expert-weight data from the same observation"
            )
        obs_mean, obs_std = wm_params.obs_mean, wm_params.obs_std
        critic = wm_params.nets.q
    params = router.init(init_key, obs_mean, obs_std, prior)
    critic_opt = optax.adam(config.critic_learning_rate)
    return RouterState(
        params=params,
        opt_state=optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate)).init(params),
        critic=critic,
        target_critic=critic,
        critic_opt_state=optax.chain(optax.clip_by_global_norm(config.max_grad_norm), critic_opt).init(critic),
        anchor=params,
        vlm_weight=jnp.asarray(config.initial_vlm_weight, jnp.float32),
        return_scale=jnp.ones((), jnp.float32),
        step=jnp.zeros((), jnp.int32),
        key=state_key,
    )


def restart_stage(state: RouterState, params: RouterParams) -> RouterState:
    """Continue from `params` (e.g. the router that collected the latest real data): it becomes the trust region's centre."""
    return state.replace(params=params, anchor=params)


def make_router_update(router: Router, model: WorldModel | None = None) -> Callable:
    """update(state, batch, wm_params) -> (state, metrics), jitted; wm_params is None when model-free."""
    return _compiled_update(router, model)


@functools.lru_cache(maxsize=8)
def _compiled_update(router: Router, model: WorldModel | None):
    config = router.config
    if config.fixed_expert is not None:
        def update(state, batch, wm_params=None):
            return state.replace(step=state.step + 1), {}
        return update
    if config.use_world_model:
        if model is None:
            raise UserError("use_world_model=True needs the world model; pass it to make_router_update")
        inner = make_imagination_update(router, model)
        return jax.jit(lambda state, batch, wm_params: inner(state, wm_params, batch), compiler_options=config.compiler_options)
    inner = make_model_free_update(router)
    return jax.jit(lambda state, batch, wm_params=None: inner(state, batch), compiler_options=config.compiler_options)


REQUIRED = {True: ("obs", "text"), False: ("obs", "text", "choice", "return")}


def prepare_batch(router: Router, batch: dict) -> dict:
    """Check a batch on the host and fill a uniform prior where the VLM is ablated or absent."""
    config = router.config
    missing = [k for k in REQUIRED[config.use_world_model] if k not in batch]
    if missing:
        raise UserError(f"router batch lacks {', '.join(missing)}; it has {', '.join(batch)}")
    obs = np.asarray(batch["obs"], np.float32)
    text = np.asarray(batch["text"], np.float32)
    if obs.ndim != 2 or obs.shape[1] != router.obs_size or text.shape != (obs.shape[0], router.text_size):
        raise UserError(
            f"router batch needs obs [N, {router.obs_size}] and text [N, {router.text_size}]; got {obs.shape} and {text.shape}"
        )
    if not np.all(np.isfinite(obs)) or not np.all(np.isfinite(text)):
        raise UserError("router batch has non-finite observations or text embeddings")
    out = {k: np.asarray(v) for k, v in batch.items()}
    out["obs"], out["text"] = obs, text
    if config.use_vlm:
        if "prior" not in batch:
            raise UserError("use_vlm=True needs a VLM prior in every batch ('prior' [N, K] or [K]); or set use_vlm=False")
        prior = check_prior(batch["prior"], router.expert_names)
        out["prior"] = np.broadcast_to(prior, (obs.shape[0], router.num_experts)).astype(np.float32)
    else:
        out["prior"] = np.full((obs.shape[0], router.num_experts), 1.0 / router.num_experts, np.float32)
    if not config.use_world_model:
        out["return"] = np.asarray(batch["return"], np.float32)
        out["choice"] = np.asarray(batch["choice"], np.int32)
        if out["choice"].min() < 0 or out["choice"].max() >= router.num_experts or not np.all(np.isfinite(out["return"])):
            raise UserError(f"router batch has choices outside 0..{router.num_experts - 1} or non-finite returns")
    return out


def train_router(
    router: Router, state: RouterState, batches: Iterable[dict], model: WorldModel | None = None,
    wm_params: WorldModelParams | None = None,
) -> tuple[RouterState, dict[str, list]]:
    """Run one update per batch, validating each batch first; stops with a UserError if anything becomes non-finite."""
    update = make_router_update(router, model)
    history: dict[str, list] = {}
    for index, batch in enumerate(batches):
        state, metrics = update(state, prepare_batch(router, batch), wm_params)
        for name, value in metrics.items():
            history.setdefault(name, []).append(np.asarray(value))
        bad = [name for name, value in metrics.items() if not np.all(np.isfinite(value))]
        if bad:
            raise UserError(f"router update {index} produced non-finite {', '.join(bad)}; lower the learning rate or check the world model")
    return state, history
