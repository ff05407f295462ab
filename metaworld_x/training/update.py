"""The update shared by both backends: normaliser, epochs of minibatch SGD, λ.

One jitted function of (TrainingState, Rollout). Minibatches split the
simulations (axis B), so each keeps whole trajectories for GAE.
"""

from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax
from brax.training.acme import running_statistics
from flax import struct

from metaworld_x.training import adaptive_lr
from metaworld_x.training.config import PPOConfig
from metaworld_x.training.constraint import update_multiplier
from metaworld_x.training.losses import LossSettings, Rollout, ppo_loss
from metaworld_x.training.networks import PPONetworks, PPOParams


@struct.dataclass
class TrainingState:
    """Everything an update changes; checkpointed whole."""

    params: PPOParams
    opt_state: Any
    normalizer: running_statistics.RunningStatisticsState
    multiplier: jax.Array  # Lagrange multiplier λ >= 0
    key: jax.Array
    env_steps: jax.Array
    iteration: jax.Array


def make_optimizer(config: PPOConfig) -> optax.GradientTransformation:
    adam = optax.adam(config.learning_rate) if config.desired_kl is None else adaptive_lr.adaptive_adam(config.learning_rate)
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), adam)


def loss_settings(config: PPOConfig) -> LossSettings:
    return LossSettings(
        discounting=config.discounting,
        gae_lambda=config.gae_lambda,
        clipping_epsilon=config.clipping_epsilon,
        entropy_cost=config.entropy_cost,
        value_cost=config.value_cost,
        reward_scaling=config.reward_scaling,
    )


def _minibatches(rollout: Rollout, key: jax.Array, count: int) -> Rollout:
    """[T, B, ...] -> [count, T, B/count, ...] over a random permutation of B."""
    num_envs = rollout.done.shape[1]
    order = jax.random.permutation(key, num_envs)

    def split(x, env_axis):
        x = jnp.take(x, order, axis=env_axis)
        shape = x.shape[:env_axis] + (count, num_envs // count) + x.shape[env_axis + 1 :]
        return jnp.moveaxis(x.reshape(shape), env_axis, 0)

    time_major = {k: v for k, v in vars(rollout).items() if k != "final_obs"}
    parts = jax.tree_util.tree_map(lambda x: split(x, 1), time_major)
    final_obs = jax.tree_util.tree_map(lambda x: split(x, 0), rollout.final_obs)
    return Rollout(final_obs=final_obs, **parts)


def make_update(config: PPOConfig, nets: PPONetworks) -> Callable:
    """update(state, rollout, measured_error) -> (state, metrics); pure, jit it."""
    optimizer = make_optimizer(config)
    settings = loss_settings(config)
    grad_fn = jax.value_and_grad(ppo_loss, has_aux=True)

    def sgd_step(train_policy, carry, minibatch):
        params, opt_state, normalizer, multiplier, key = carry
        key, loss_key = jax.random.split(key)
        (_, metrics), grads = grad_fn(
            params, normalizer, minibatch, multiplier, loss_key, nets, settings, config.constraint
        )
        updates, opt_state = optimizer.update(grads, opt_state, params)
        # Held during the critics' warm-up. Its steps are dropped, not its gradients: Adam's moments learn their
        # scale meanwhile. Zeroed gradients left them empty while the shared step count ran on, so the first real
        # step moved every weight by 2.5x the learning rate whatever its gradient (KL 119 in one update).
        updates = updates.replace(policy=jax.tree_util.tree_map(lambda u: jnp.where(train_policy, u, 0.0), updates.policy))
        params = optax.apply_updates(params, updates)
        metrics["losses/grad_norm"] = optax.tree.norm(grads)
        return (params, opt_state, normalizer, multiplier, key), metrics

    def update(state: TrainingState, rollout: Rollout, measured_error: jax.Array):
        train_policy = state.iteration >= (config.critic_warmup_iterations or 0)

        def epoch(carry, _):
            params, opt_state, normalizer, multiplier, key = carry
            key, perm_key = jax.random.split(key)
            batches = _minibatches(rollout, perm_key, config.num_minibatches)
            return jax.lax.scan(partial(sgd_step, train_policy), (params, opt_state, normalizer, multiplier, key), batches)

        key, update_key = jax.random.split(state.key)
        carry = (state.params, state.opt_state, state.normalizer, state.multiplier, update_key)
        (params, opt_state, _, _, _), metrics = jax.lax.scan(epoch, carry, None, length=config.num_epochs)
        # The statistics move after the epochs, so the batch is scored with the
        # normalisation the behaviour policy used and PPO's ratio means what it says.
        normalizer = state.normalizer
        if config.normalize_observations and not config.freeze_statistics:
            normalizer = running_statistics.update(normalizer, rollout.obs)
        metrics = jax.tree_util.tree_map(jnp.mean, metrics)
        if config.desired_kl is not None:
            # not while the policy is held: its KL is 0 then, and 30 held updates would raise the rate 1.5^30-fold
            rate = optax.tree_utils.tree_get(opt_state, "learning_rate")
            rate = jnp.where(train_policy, adaptive_lr.adapted(rate, metrics["losses/approx_kl"], config.desired_kl), rate)
            opt_state = optax.tree_utils.tree_set(opt_state, learning_rate=rate)
            metrics["losses/learning_rate"] = rate
        multiplier = update_multiplier(config.constraint, state.multiplier, measured_error)
        metrics["constraint/multiplier"] = multiplier
        metrics["constraint/violation"] = measured_error - config.constraint.budget
        new_state = state.replace(
            params=params,
            opt_state=opt_state,
            normalizer=normalizer,
            multiplier=multiplier,
            key=key,
            env_steps=state.env_steps + config.steps_per_iteration,
            iteration=state.iteration + 1,
        )
        finite = all_finite((params, metrics["losses/total"]))
        return new_state, metrics, finite

    return update


def all_finite(tree) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]
    return jnp.all(jnp.stack(leaves))
