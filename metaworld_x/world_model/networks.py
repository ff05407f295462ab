"""Building blocks of the world model: normed MLPs, SimNorm and two-hot values.

Rewards and values are predicted as distributions over bins in symlog space
and trained with cross-entropy against a two-hot target (TD-MPC2). That keeps
one set of hyperparameters working whether a task pays 0.01 or 10 per step,
without a reward normaliser whose statistics would drift with the router.
"""

from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp


def symlog(x: jax.Array) -> jax.Array:
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def symexp(x: jax.Array) -> jax.Array:
    return jnp.sign(x) * jnp.expm1(jnp.abs(x))


def simnorm(x: jax.Array, group: int) -> jax.Array:
    """Softmax over consecutive groups of `group` features: [..., n] -> [..., n]."""
    shape = x.shape
    x = x.reshape(shape[:-1] + (shape[-1] // group, group))
    return jax.nn.softmax(x, axis=-1).reshape(shape)


def bin_centres(num_bins: int, value_range: float) -> jax.Array:
    return jnp.linspace(-value_range, value_range, num_bins)


def two_hot(x: jax.Array, num_bins: int, value_range: float) -> jax.Array:
    """Two-hot encoding of real values [...] in symlog space: [..., num_bins]."""
    width = 2 * value_range / (num_bins - 1)
    position = (jnp.clip(symlog(x), -value_range, value_range) + value_range) / width
    low = jnp.clip(jnp.floor(position), 0, num_bins - 2)
    upper_weight = position - low
    low = low.astype(jnp.int32)
    return (jax.nn.one_hot(low, num_bins) * (1 - upper_weight)[..., None]
            + jax.nn.one_hot(low + 1, num_bins) * upper_weight[..., None])


def decode_two_hot(logits: jax.Array, value_range: float) -> jax.Array:
    """Expected value of a bin distribution [..., bins], back in real units: [...]."""
    centres = bin_centres(logits.shape[-1], value_range)
    return symexp(jnp.sum(jax.nn.softmax(logits, axis=-1) * centres, axis=-1))


def two_hot_cross_entropy(logits: jax.Array, target: jax.Array, value_range: float) -> jax.Array:
    """Cross-entropy [...] of logits [..., bins] against real targets [...]."""
    labels = two_hot(target, logits.shape[-1], value_range)
    return -jnp.sum(labels * jax.nn.log_softmax(logits, axis=-1), axis=-1)


class MLP(nn.Module):
    """Dense → LayerNorm → Mish per hidden layer, then a linear output with an optional normalisation."""

    hidden: tuple[int, ...]
    out: int
    out_norm: str = "none"  # none | simnorm | layernorm
    simnorm_group: int = 8
    zero_output: bool = False

    @nn.compact
    def __call__(self, x):
        for size in self.hidden:
            x = jax.nn.mish(nn.LayerNorm()(nn.Dense(size)(x)))
        init: Callable = nn.initializers.zeros if self.zero_output else nn.initializers.lecun_normal()
        x = nn.Dense(self.out, kernel_init=init)(x)
        if self.out_norm == "simnorm":
            x = simnorm(x, self.simnorm_group)
        elif self.out_norm == "layernorm":
            x = nn.LayerNorm()(x)
        return x


def ema(target, online, tau: float):
    """target ← (1 − τ)·target + τ·online, leaf by leaf."""
    return jax.tree_util.tree_map(lambda t, o: (1 - tau) * t + tau * o, target, online)
