"""MPPI over sequences of expert weights in the world model.

Weights are parameterised by logits [H, K] drawn from a Gaussian; each
sample's score is Σ_t γ^t (Π c) r̂_t plus the discounted mean Q at the horizon.
The Gaussian moves to the exp(score / temperature)-weighted mean of the
samples; the first step's softmax(mean) is returned. Weights below
`min_weight` are dropped and the rest renormalised, in the samples and in the
answer alike, as the router's own are (RouterConfig.min_weight).
"""

import functools

import jax
import jax.numpy as jnp

from metaworld_x.routing.config import RouterConfig
from metaworld_x.routing.network import drop_small_weights
from metaworld_x.world_model.model import WorldModel, WorldModelParams


@functools.partial(jax.jit, static_argnames=("model", "horizon", "samples", "iterations", "num_experts", "min_weight"))
def plan_mppi(
    model: WorldModel, params: WorldModelParams, z: jax.Array, key: jax.Array, horizon: int = 5, samples: int = 256,
    iterations: int = 4, num_experts: int | None = None, temperature: float = 0.5, discount: float = 0.99,
    init_std: float = 2.0, min_std: float = 0.05, min_weight: float = RouterConfig.min_weight,
) -> jax.Array:
    """Expert weights [K] to apply now in latent z [latent]."""
    k = num_experts or model.cond_size

    def score(logits):  # [H, K] -> scalar
        def step(carry, w):
            z, alive, scale = carry
            r = model.reward(params, z, w)
            z_next = model.next(params, z, w)
            return (z_next, alive * (1 - model.terminated(params, z_next)), scale * discount), alive * scale * r

        weights = drop_small_weights(jax.nn.softmax(logits, axis=-1), min_weight)
        (z_end, alive, scale), rewards = jax.lax.scan(step, (z, 1.0, 1.0), weights)
        return jnp.sum(rewards) + alive * scale * jnp.mean(model.Q(params, z_end, weights[-1]))

    def iterate(carry, it_key):
        mean, std = carry
        logits = mean + std * jax.random.normal(it_key, (samples, horizon, k))
        scores = jax.vmap(score)(logits)
        w = jax.nn.softmax((scores - jnp.max(scores)) / temperature)
        mean = jnp.einsum("s,shk->hk", w, logits)
        std = jnp.maximum(jnp.sqrt(jnp.einsum("s,shk->hk", w, (logits - mean) ** 2)), min_std)
        return (mean, std), jnp.max(scores)

    init = (jnp.zeros((horizon, k)), jnp.full((horizon, k), init_std))
    (mean, _), _ = jax.lax.scan(iterate, init, jax.random.split(key, iterations))
    return drop_small_weights(jax.nn.softmax(mean[0]), min_weight)
