"""The latent dynamics model, with methods named after TD-MPC2's notation.

    z  = encode(o)            o: [..., obs]     z: [..., latent]
    z' = next(z, c)           c: [..., cond]    the conditioning input
    r̂  = reward(z, c)         [...]
    Q  = Q(z, c)              [num_q, ...]      the ensemble
    p  = terminated(z')       [...]             probability that z' ends the episode
    ô  = decode(z)            [..., obs]        normalised observation

The conditioning input `c` is whatever drove the data: a joint action, or the
router's weights over the experts. The router conditions on expert weights,
because calling the experts inside imagination would need raw observations
that the latent rollout does not have. The decoder is an addition to TD-MPC2:
the router reads (normalised) policy observations, so imagination decodes
each latent for it.

Observations are normalised with statistics fixed when training starts
(`obs_mean`, `obs_std`); they travel with the parameters.
"""

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from metaworld_x.world_model.config import WorldModelConfig
from metaworld_x.world_model.networks import MLP, decode_two_hot


@struct.dataclass
class WorldModelNets:
    """Trainable parameters."""

    encoder: Any
    dynamics: Any
    reward: Any
    q: Any  # stacked over the ensemble: leading axis num_q
    terminated: Any
    decoder: Any


@struct.dataclass
class WorldModelParams:
    nets: WorldModelNets
    target_encoder: Any  # EMA copy (used only when config.target_encoder == 'ema')
    target_q: Any  # EMA copy of the Q ensemble
    obs_mean: jax.Array  # [obs]
    obs_std: jax.Array  # [obs]


@dataclass(frozen=True)
class WorldModel:
    """Architecture (config and sizes); every method is pure in its params."""

    config: WorldModelConfig
    obs_size: int
    cond_size: int

    @property
    def _encoder(self):
        c = self.config
        return MLP(c.encoder_hidden, c.latent_size, c.latent_norm, c.simnorm_group)

    @property
    def _dynamics(self):
        c = self.config
        return MLP(c.hidden, c.latent_size, c.latent_norm, c.simnorm_group)

    @property
    def _value_head(self):
        return MLP(self.config.hidden, self.config.num_bins, zero_output=True)

    @property
    def _terminated(self):
        return MLP(self.config.hidden, 1)

    @property
    def _decoder(self):
        return MLP(self.config.hidden, self.obs_size)

    def init(self, key: jax.Array, obs_mean=None, obs_std=None) -> WorldModelParams:
        c = self.config
        keys = jax.random.split(key, 6)
        obs = jnp.zeros((1, self.obs_size))
        z = jnp.zeros((1, c.latent_size))
        zc = jnp.zeros((1, c.latent_size + self.cond_size))
        q_keys = jax.random.split(keys[3], c.num_q)
        nets = WorldModelNets(
            encoder=self._encoder.init(keys[0], obs),
            dynamics=self._dynamics.init(keys[1], zc),
            reward=self._value_head.init(keys[2], zc),
            q=jax.vmap(self._value_head.init, (0, None))(q_keys, zc),
            terminated=self._terminated.init(keys[4], z),
            decoder=self._decoder.init(keys[5], z),
        )
        mean = jnp.zeros(self.obs_size) if obs_mean is None else jnp.asarray(obs_mean, jnp.float32)
        std = jnp.ones(self.obs_size) if obs_std is None else jnp.asarray(obs_std, jnp.float32)
        return WorldModelParams(nets, nets.encoder, nets.q, mean, std)

    def normalise(self, params: WorldModelParams, obs: jax.Array) -> jax.Array:
        return (obs - params.obs_mean) / params.obs_std

    def encode(self, params: WorldModelParams, obs: jax.Array, target: bool = False) -> jax.Array:
        """Raw observations [..., obs] -> latents [..., latent]."""
        weights = params.target_encoder if target else params.nets.encoder
        return self._encoder.apply(weights, self.normalise(params, obs))

    def next(self, params: WorldModelParams, z: jax.Array, cond: jax.Array) -> jax.Array:
        """One latent step: [..., latent], [..., cond] -> [..., latent]."""
        return self._dynamics.apply(params.nets.dynamics, jnp.concatenate([z, cond], axis=-1))

    def reward_logits(self, params: WorldModelParams, z: jax.Array, cond: jax.Array) -> jax.Array:
        return self._value_head.apply(params.nets.reward, jnp.concatenate([z, cond], axis=-1))

    def reward(self, params: WorldModelParams, z: jax.Array, cond: jax.Array) -> jax.Array:
        """Expected reward [...] of taking `cond` in `z`."""
        return decode_two_hot(self.reward_logits(params, z, cond), self.config.value_range)

    def Q_logits(self, params: WorldModelParams, z: jax.Array, cond: jax.Array, target: bool = False) -> jax.Array:
        """[num_q, ..., bins]."""
        weights = params.target_q if target else params.nets.q
        zc = jnp.concatenate([z, cond], axis=-1)
        return jax.vmap(self._value_head.apply, (0, None))(weights, zc)

    def Q(self, params: WorldModelParams, z: jax.Array, cond: jax.Array, target: bool = False) -> jax.Array:
        """Each ensemble head's value [num_q, ...]."""
        return decode_two_hot(self.Q_logits(params, z, cond, target), self.config.value_range)

    def terminated_logit(self, params: WorldModelParams, z: jax.Array) -> jax.Array:
        return self._terminated.apply(params.nets.terminated, z)[..., 0]

    def terminated(self, params: WorldModelParams, z: jax.Array) -> jax.Array:
        """Probability [...] that latent z is a terminal state."""
        return jax.nn.sigmoid(self.terminated_logit(params, z))

    def decode(self, params: WorldModelParams, z: jax.Array) -> jax.Array:
        """Latents [..., latent] -> normalised observations [..., obs]."""
        return self._decoder.apply(params.nets.decoder, z)

    def rollout(self, params: WorldModelParams, z: jax.Array, conds: jax.Array) -> jax.Array:
        """Latent rollout from z [B, latent] under conds [B, T, cond]: [B, T + 1, latent], z first."""

        def step(z, cond):
            z = self.next(params, z, cond)
            return z, z

        _, zs = jax.lax.scan(step, z, jnp.swapaxes(conds, 0, 1))
        return jnp.concatenate([z[:, None], jnp.swapaxes(zs, 0, 1)], axis=1)
