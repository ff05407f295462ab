"""Open-loop evaluation of the world model over k steps."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.world_model.model import WorldModel, WorldModelParams


def k_step_error(
    model: WorldModel, params: WorldModelParams, sequences: dict, ks: tuple[int, ...] = (1, 5, 20)
) -> dict[int, dict[str, float]]:
    """Errors of an open-loop latent rollout, k steps from the start of each sequence.

    sequences: obs [N, L+1, obs], cond [N, L, cond], reward [N, L] (as from
    `ReplayBuffer.sequences(L, ...)`), with L >= max(ks). The latent is rolled
    out from encode(o_0) under the recorded conditioning only. For each k it
    reports two numbers:

    - 'latent_mse': mean over sequences and latent features of
      (ẑ_k − encode(o_k))², the predicted latent against the encoded true
      observation;
    - 'reward_mae': mean over sequences of |reward(ẑ_{k−1}, c_{k−1}) − r_{k−1}|,
      the reward predicted for the k-th transition from the rolled-out latent.
    """
    obs, cond, reward = (jnp.asarray(sequences[k], jnp.float32) for k in ("obs", "cond", "reward"))
    length = cond.shape[1]
    if not ks or min(ks) < 1 or max(ks) > length:
        raise UserError(f"every k must be in 1..{length} (the sequences' length); got {tuple(ks)}")
    latent, rewards = _errors(model, params, obs, cond, reward)
    return {int(k): {"latent_mse": float(latent[k - 1]), "reward_mae": float(rewards[k - 1])} for k in ks}


def _errors(model, params, obs, cond, reward):
    latent, rewards = _compiled_errors(model)(params, obs, cond, reward)
    return np.asarray(latent), np.asarray(rewards)


@functools.lru_cache(maxsize=8)
def _compiled_errors(model: WorldModel):
    @functools.partial(jax.jit, compiler_options=model.config.compiler_options)
    def errors(params, obs, cond, reward):
        zs = model.rollout(params, model.encode(params, obs[:, 0]), cond)  # [N, L+1, z]
        true = model.encode(params, obs)
        latent = jnp.mean((zs[:, 1:] - true[:, 1:]) ** 2, axis=(0, 2))
        predicted = model.reward(params, zs[:, :-1], cond)
        return latent, jnp.mean(jnp.abs(predicted - reward), axis=0)

    return errors
