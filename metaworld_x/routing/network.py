"""The router network, its weights over experts, and the mixture of expert actions.

    logits  = MLP([normalise(obs), text])          [B, K]
    weights = softmax(logits)                       soft (weights < min_weight dropped, the rest renormalised)
            | one_hot(argmax(logits + g)) + ST      hard Gumbel-softmax: one-hot forward,
                                                    gradient of softmax((logits + g) / τ)
    action  = Σ_i weights_i · action_i              mixture_action
"""

import functools
from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from metaworld_x.errors import UserError
from metaworld_x.routing.config import RouterConfig


class RouterMLP(nn.Module):
    hidden: tuple[int, ...]
    num_experts: int

    @nn.compact
    def __call__(self, x):
        for size in self.hidden:
            x = jax.nn.swish(nn.Dense(size)(x))
        return nn.Dense(self.num_experts, name="out")(x)


@struct.dataclass
class RouterParams:
    obs_mean: jax.Array  # [obs]
    obs_std: jax.Array  # [obs]
    mlp: dict


@dataclass(frozen=True)
class Router:
    """Architecture: config, input sizes and the ordered expert names; methods are pure in params."""

    config: RouterConfig
    obs_size: int
    text_size: int
    expert_names: tuple[str, ...]

    def __post_init__(self):
        object.__setattr__(self, "expert_names", tuple(self.expert_names))
        if len(self.expert_names) < 1 or len(set(self.expert_names)) != len(self.expert_names):
            raise UserError(f"the router needs distinct expert names, got {list(self.expert_names)}")
        fixed = self.config.fixed_expert
        if fixed is not None and fixed not in self.expert_names:
            raise UserError(f"fixed_expert {fixed!r} is not an installed expert; choose one of {list(self.expert_names)}")

    @property
    def num_experts(self) -> int:
        return len(self.expert_names)

    @property
    def _mlp(self) -> RouterMLP:
        return RouterMLP(self.config.hidden, self.num_experts)

    def init(self, key: jax.Array, obs_mean=None, obs_std=None, prior=None) -> RouterParams:
        """Fresh parameters; with use_vlm and a prior [K], the router starts out close to that prior."""
        mlp = _jitted_init(self.config.hidden, self.num_experts, self.obs_size + self.text_size)(key)
        if prior is not None and self.config.use_vlm:
            from metaworld_x.routing.prior import check_prior

            prior = check_prior(prior, self.expert_names)
            out = mlp["params"]["out"]
            out = {"kernel": out["kernel"] * self.config.prior_init_scale, "bias": jnp.log(jnp.maximum(jnp.asarray(prior), 1e-6))}
            mlp = {"params": {**mlp["params"], "out": out}}
        mean = jnp.zeros(self.obs_size) if obs_mean is None else jnp.asarray(obs_mean, jnp.float32)
        std = jnp.ones(self.obs_size) if obs_std is None else jnp.asarray(obs_std, jnp.float32)
        return RouterParams(mean, std, mlp)

    def template(self) -> RouterParams:
        """Parameter shapes only (nothing is compiled), to deserialise into."""

        def build(key):
            mlp = self._mlp.init(key, jnp.zeros((1, self.obs_size + self.text_size)))
            return RouterParams(jnp.zeros(self.obs_size), jnp.ones(self.obs_size), mlp)

        return jax.eval_shape(build, jax.random.PRNGKey(0))

    def logits_normalised(self, params: RouterParams, obs_norm: jax.Array, text: jax.Array) -> jax.Array:
        """Logits [..., K] from already-normalised observations [..., obs] and text embeddings [..., text]."""
        return self._mlp.apply(params.mlp, jnp.concatenate([obs_norm, text], axis=-1))

    def logits(self, params: RouterParams, obs: jax.Array, text: jax.Array) -> jax.Array:
        return self.logits_normalised(params, (obs - params.obs_mean) / params.obs_std, text)

    def weights_from_logits(self, logits: jax.Array, key: jax.Array | None = None) -> jax.Array:
        """Weights [..., K] on the simplex; with a fixed expert, its one-hot."""
        config = self.config
        if config.fixed_expert is not None:
            one_hot = jax.nn.one_hot(self.expert_names.index(config.fixed_expert), self.num_experts)
            return jnp.broadcast_to(one_hot, logits.shape)
        if config.output == "softmax":
            return drop_small_weights(jax.nn.softmax(logits, axis=-1), config.min_weight)
        return hard_gumbel_softmax(logits, key, config.gumbel_temperature)

    def weights(self, params: RouterParams, obs: jax.Array, text: jax.Array, key: jax.Array | None = None) -> jax.Array:
        """Weights [..., K] over the experts for raw observations [..., obs] and text embeddings [..., text].

        In gumbel mode a key draws the Gumbel noise; without one the hard
        choice is the argmax (deployment)."""
        return self.weights_from_logits(self.logits(params, obs, text), key)

    def sample(self, params: RouterParams, obs: jax.Array, text: jax.Array, key: jax.Array) -> jax.Array:
        """Expert indices [...] drawn from the categorical softmax(logits): the model-free router's actions."""
        if self.config.fixed_expert is not None:
            return jnp.full(obs.shape[:-1], self.expert_names.index(self.config.fixed_expert))
        return jax.random.categorical(key, self.logits(params, obs, text), axis=-1)


@functools.lru_cache(maxsize=16)
def _jitted_init(hidden: tuple[int, ...], num_experts: int, input_size: int):
    """One compiled initialiser per architecture (eager flax init compiles every primitive separately)."""
    module = RouterMLP(hidden, num_experts)
    return jax.jit(lambda key: module.init(key, jnp.zeros((1, input_size))), compiler_options={"xla_backend_optimization_level": 0})


def drop_small_weights(weights: jax.Array, min_weight: float) -> jax.Array:
    """Weights [..., K] below `min_weight` set to 0 and the rest renormalised; the largest is always kept."""
    if min_weight <= 0:
        return weights
    keep = (weights >= min_weight) | (weights == jnp.max(weights, axis=-1, keepdims=True))
    kept = jnp.where(keep, weights, 0.0)
    renormalised = kept / jnp.sum(kept, axis=-1, keepdims=True)
    # Under jit XLA may divide as x · (1/Σx), which rounds a lone kept weight to
    # 0.99999994; that scaled action rolls out differently from the expert's own,
    # so one kept expert is set exactly one-hot (its gradient is 0 either way).
    lone = jnp.sum(keep, axis=-1, keepdims=True) == 1
    return jnp.where(lone, keep.astype(weights.dtype), renormalised)


def hard_gumbel_softmax(logits: jax.Array, key: jax.Array | None, temperature: float) -> jax.Array:
    """One-hot [..., K] forward; the gradient is that of softmax((logits + g) / τ) (straight-through)."""
    if key is not None:
        logits = logits + jax.random.gumbel(key, logits.shape)
    soft = jax.nn.softmax(logits / temperature, axis=-1)
    hard = jax.nn.one_hot(jnp.argmax(logits, axis=-1), logits.shape[-1])
    return hard + (soft - jax.lax.stop_gradient(soft))  # exactly one-hot forward


def mixture_action(weights: jax.Array, expert_actions: jax.Array) -> jax.Array:
    """Σ_i w_i · a_i: weights [B, K], expert actions [B, K, A] -> [B, A]."""
    if weights.shape != expert_actions.shape[:-1]:
        raise UserError(f"weights {weights.shape} do not match expert actions {expert_actions.shape}: expected [B, K] and [B, K, A]")
    return jnp.einsum("bk,bka->ba", weights, expert_actions)


def entropy(logits: jax.Array) -> jax.Array:
    """−Σ w log w of w = softmax(logits) over the last axis.

    Taken from the logits: through the weights, a weight that underflows to
    exactly 0 gives d(w log w)/dw = −inf times dw = 0, a NaN gradient."""
    log_w = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(log_w) * log_w, axis=-1)


def kl_divergence(prior: jax.Array, logits: jax.Array) -> jax.Array:
    """KL(prior ‖ softmax(logits)) over the last axis; zero-probability prior entries contribute nothing."""
    log_q = jax.nn.log_softmax(logits, axis=-1)
    return jnp.sum(jax.scipy.special.xlogy(prior, prior) - prior * log_q, axis=-1)
