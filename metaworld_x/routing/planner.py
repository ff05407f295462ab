"""MPPI over sequences of expert weights in the world model.

Weights are parameterised by logits [H, K] drawn from a Gaussian; each
sample's score is Σ_t γ^t (Π c) r̂_t plus the discounted mean Q at the horizon
(`imagined_return`). The Gaussian moves to the exp(score / temperature)-weighted
mean of the samples; softmax(mean) is the plan, step by step, and `plan_mppi`
returns its first step. Weights below `min_weight` are dropped and the rest
renormalised, in the samples and in the answer alike, as the router's own are
(RouterConfig.min_weight).

At run time (`metaworld-x eval router --plan mppi`) the Gaussian's mean starts
at the router's own logits, so the planner searches around what the router
would do and, given no iterations, returns exactly a softmax router's weights.
"""

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metaworld_x.errors import UserError
from metaworld_x.routing.config import RouterConfig
from metaworld_x.routing.network import drop_small_weights
from metaworld_x.world_model.model import WorldModel, WorldModelParams


@dataclass(frozen=True)
class MppiConfig:
    """MPPI at run time: how far, how wide and how often the router's weights are searched around in the world model."""

    horizon: int = 5
    """Steps planned ahead in the world model."""
    samples: int = 256
    """Weight sequences drawn per iteration."""
    iterations: int = 4
    """Refits of the Gaussian per plan; 0 executes the planner's mean, the router's own weights."""
    every: int = 1
    """Control steps per plan: the steps in between execute the plan's later weights, so at most `horizon`."""
    init_std: float = 2.0
    """Standard deviation of the first iteration's logits around the router's."""
    temperature: float = 0.5
    """Scores are weighted by exp(score / temperature): lower follows the best samples more closely."""

    def __post_init__(self):
        for name in ("horizon", "samples", "every"):
            if getattr(self, name) < 1:
                raise UserError(f"MPPI {name} must be at least 1, got {getattr(self, name)}")
        if self.iterations < 0:
            raise UserError(f"MPPI iterations must be at least 0, got {self.iterations}")
        if self.every > self.horizon:
            raise UserError(f"MPPI plans {self.horizon} steps but would be followed for {self.every}:"
                            f" set every <= horizon, or raise the horizon")
        if self.init_std <= 0 or self.temperature <= 0:
            raise UserError(f"MPPI init_std and temperature must be positive, got {self.init_std} and {self.temperature}")

    def describe(self) -> str:
        """One line for tables and plots."""
        every = "every step" if self.every == 1 else f"every {self.every} steps"
        return (f"MPPI in the world model (horizon {self.horizon}, {self.samples} samples, {self.iterations} iterations,"
                f" replanned {every}, from the router's weights)")


@functools.partial(jax.jit, static_argnames=("model", "horizon", "samples", "iterations", "num_experts", "min_weight"))
def plan_weight_sequence(
    model: WorldModel, params: WorldModelParams, z: jax.Array, key: jax.Array, horizon: int = 5, samples: int = 256,
    iterations: int = 4, num_experts: int | None = None, temperature: float = 0.5, discount: float = 0.99,
    init_std: float = 2.0, min_std: float = 0.05, min_weight: float = RouterConfig.min_weight,
    init_logits: jax.Array | None = None,
) -> jax.Array:
    """Planned expert weights [H, K] from latent z [latent]; the Gaussian's mean starts at init_logits [K] or [H, K]
    (default 0: uniform weights)."""
    k = num_experts or model.cond_size

    def score(logits):  # [H, K] -> scalar
        return imagined_return(model, params, z, drop_small_weights(jax.nn.softmax(logits, axis=-1), min_weight), discount)

    def iterate(carry, it_key):
        mean, std = carry
        logits = mean + std * jax.random.normal(it_key, (samples, horizon, k))
        scores = jax.vmap(score)(logits)
        w = jax.nn.softmax((scores - jnp.max(scores)) / temperature)
        mean = jnp.einsum("s,shk->hk", w, logits)
        std = jnp.maximum(jnp.sqrt(jnp.einsum("s,shk->hk", w, (logits - mean) ** 2)), min_std)
        return (mean, std), jnp.max(scores)

    mean = jnp.zeros((horizon, k)) if init_logits is None else jnp.broadcast_to(init_logits, (horizon, k))
    (mean, _), _ = jax.lax.scan(iterate, (mean, jnp.full((horizon, k), init_std)), jax.random.split(key, iterations))
    return drop_small_weights(jax.nn.softmax(mean, axis=-1), min_weight)


def imagined_return(model: WorldModel, params: WorldModelParams, z: jax.Array, weights: jax.Array,
                    discount: float = 0.99) -> jax.Array:
    """What the world model expects of weights [H, K] from latent z [latent]: Σ_t γ^t (Π c) r̂_t plus the discounted
    mean Q at the horizon (a scalar), c being the probability of not terminating."""

    def step(carry, w):
        z, alive, scale = carry
        r = model.reward(params, z, w)
        z_next = model.next(params, z, w)
        return (z_next, alive * (1 - model.terminated(params, z_next)), scale * discount), alive * scale * r

    (z_end, alive, scale), rewards = jax.lax.scan(step, (z, 1.0, 1.0), weights)
    return jnp.sum(rewards) + alive * scale * jnp.mean(model.Q(params, z_end, weights[-1]))


def plan_mppi(model: WorldModel, params: WorldModelParams, z: jax.Array, key: jax.Array, **kwargs) -> jax.Array:
    """Expert weights [K] to apply now in latent z [latent] (`plan_weight_sequence`'s first step)."""
    return plan_weight_sequence(model, params, z, key, **kwargs)[0]


@functools.lru_cache(maxsize=8)
def batched_planner(model: WorldModel, config: MppiConfig, min_weight: float):
    """plan(params, obs [B, obs], logits [B, K], key) -> weights [B, H, K]: one plan per world, jitted."""

    def plan_one(params, obs, logits, key):
        return plan_weight_sequence(
            model, params, model.encode(params, obs), key, horizon=config.horizon, samples=config.samples,
            iterations=config.iterations, num_experts=logits.shape[-1], temperature=config.temperature,
            init_std=config.init_std, min_weight=min_weight, init_logits=logits)

    def plan(params, obs, logits, key):
        keys = jax.random.split(key, obs.shape[0])
        return jax.vmap(plan_one, (None, 0, 0, 0))(params, obs, logits, keys)

    return jax.jit(plan)
