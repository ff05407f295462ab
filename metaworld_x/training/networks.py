"""Policy and critics, built from brax's network components.

The policy sees `obs['state']`; the two critics (one per value stream:
reward and constraint cost) see `obs['privileged_state']`.
"""

from dataclasses import dataclass
from typing import Any

from brax.training import distribution, networks
from brax.training.acme import running_statistics
from flax import linen, struct


@struct.dataclass
class PPOParams:
    """Trainable parameters."""

    policy: Any
    reward_value: Any
    cost_value: Any


@dataclass(frozen=True)
class PPONetworks:
    policy: networks.FeedForwardNetwork
    reward_value: networks.FeedForwardNetwork
    cost_value: networks.FeedForwardNetwork
    action_distribution: distribution.ParametricDistribution


def make_networks(
    observation_sizes: dict[str, tuple[int, ...]],
    action_size: int,
    policy_hidden: tuple[int, ...],
    value_hidden: tuple[int, ...],
    normalize_observations: bool,
) -> PPONetworks:
    """Networks for observations {'state': (o,), 'privileged_state': (p,)}."""
    preprocess = _normalize_and_clip if normalize_observations else _identity
    action_distribution = distribution.NormalTanhDistribution(event_size=action_size)
    policy = networks.make_policy_network(
        action_distribution.param_size,
        observation_sizes,
        preprocess_observations_fn=preprocess,
        hidden_layer_sizes=policy_hidden,
        activation=linen.swish,
        obs_key="state",
    )

    def critic():
        return networks.make_value_network(
            observation_sizes,
            preprocess_observations_fn=preprocess,
            hidden_layer_sizes=value_hidden,
            activation=linen.swish,
            obs_key="privileged_state",
        )

    return PPONetworks(policy, critic(), critic(), action_distribution)


def init_params(nets: PPONetworks, key) -> PPOParams:
    import jax

    k_policy, k_reward, k_cost = jax.random.split(key, 3)
    return PPOParams(nets.policy.init(k_policy), nets.reward_value.init(k_reward), nets.cost_value.init(k_cost))


# Normalised observations are clipped: early in training the running
# statistics come from few, similar states, and a feature that later moves
# far from them must not produce inputs large enough to wreck an update.
OBS_CLIP = 10.0


def _normalize_and_clip(x, normalizer_params):
    return running_statistics.normalize(x, normalizer_params, max_abs_value=OBS_CLIP)


def _identity(x, _normalizer_params):
    return x
