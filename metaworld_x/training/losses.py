"""The PPO loss with two value streams (reward and constraint cost), as pure functions."""

from typing import Any

import jax
import jax.numpy as jnp
from brax.training.agents.ppo.losses import compute_gae
from flax import struct

from metaworld_x.training.constraint import ConstraintConfig, combine_advantages
from metaworld_x.training.networks import PPONetworks, PPOParams


@struct.dataclass
class Rollout:
    """Collected experience, time-major: leaves are [T, B, ...] except final_obs [B, ...]."""

    obs: dict
    raw_action: jax.Array  # [T, B, a] pre-tanh sample
    log_prob: jax.Array  # [T, B] behaviour log-probability of raw_action
    reward: jax.Array  # [T, B] reward stream
    cost: jax.Array  # [T, B] constraint-cost stream
    done: jax.Array  # [T, B] episode ended after this step (terminated or truncated)
    truncation: jax.Array  # [T, B] ended by the time limit, not by failure
    final_obs: dict  # observation after the last step, for bootstrapping


@struct.dataclass
class LossSettings:
    """The scalars the loss needs; static under jit."""

    discounting: float = struct.field(pytree_node=False)
    gae_lambda: float = struct.field(pytree_node=False)
    clipping_epsilon: float = struct.field(pytree_node=False)
    entropy_cost: float = struct.field(pytree_node=False)
    value_cost: float = struct.field(pytree_node=False)
    reward_scaling: float = struct.field(pytree_node=False)


def clipped_surrogate(log_ratio: jax.Array, advantage: jax.Array, epsilon: float) -> jax.Array:
    """PPO's policy loss: -E[min(ρA, clip(ρ, 1±ε)A)]."""
    ratio = jnp.exp(log_ratio)
    return -jnp.mean(jnp.minimum(ratio * advantage, jnp.clip(ratio, 1 - epsilon, 1 + epsilon) * advantage))


def stream_targets(values, bootstrap, rewards, done, truncation, settings: LossSettings):
    """GAE value targets and advantages of one stream. [T, B] -> [T, B], [T, B]."""
    termination = done * (1 - truncation)
    return compute_gae(
        truncation=truncation,
        termination=termination,
        rewards=rewards * settings.reward_scaling,
        values=values,
        bootstrap_value=bootstrap,
        lambda_=settings.gae_lambda,
        discount=settings.discounting,
    )


def ppo_loss(
    params: PPOParams,
    normalizer: Any,
    rollout: Rollout,
    multiplier: jax.Array,
    key: jax.Array,
    nets: PPONetworks,
    settings: LossSettings,
    constraint: ConstraintConfig,
) -> tuple[jax.Array, dict]:
    """Total loss and its named parts for one minibatch."""
    logits = nets.policy.apply(normalizer, params.policy, rollout.obs)
    reward_values = nets.reward_value.apply(normalizer, params.reward_value, rollout.obs)
    cost_values = nets.cost_value.apply(normalizer, params.cost_value, rollout.obs)
    reward_bootstrap = nets.reward_value.apply(normalizer, params.reward_value, rollout.final_obs)
    cost_bootstrap = nets.cost_value.apply(normalizer, params.cost_value, rollout.final_obs)

    reward_targets, reward_advantages = stream_targets(
        reward_values, reward_bootstrap, rollout.reward, rollout.done, rollout.truncation, settings
    )
    cost_targets, cost_advantages = stream_targets(
        cost_values, cost_bootstrap, rollout.cost, rollout.done, rollout.truncation, settings
    )
    advantages = combine_advantages(constraint, reward_advantages, cost_advantages, multiplier)
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

    log_prob = nets.action_distribution.log_prob(logits, rollout.raw_action)
    policy_loss = clipped_surrogate(log_prob - rollout.log_prob, advantages, settings.clipping_epsilon)
    reward_value_loss = 0.5 * jnp.mean((reward_targets - reward_values) ** 2)
    cost_value_loss = 0.5 * jnp.mean((cost_targets - cost_values) ** 2)
    entropy = jnp.mean(nets.action_distribution.entropy(logits, key))
    total = policy_loss + settings.value_cost * (reward_value_loss + cost_value_loss) - settings.entropy_cost * entropy
    approx_kl = jnp.mean(rollout.log_prob - log_prob)
    return total, {
        "losses/total": total,
        "losses/policy": policy_loss,
        "losses/reward_value": reward_value_loss,
        "losses/cost_value": cost_value_loss,
        "losses/entropy": entropy,
        "losses/approx_kl": approx_kl,
    }
