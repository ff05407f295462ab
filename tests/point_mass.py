"""A trivial task for testing the trainer: drive a 2-D point mass to a goal.

Written against the same environment protocol as the real environments
(reset/step, obs dict, reward, done, metrics, info['truncation']), in pure
JAX (`backend='mjx'`, jittable) or stepping numpy from Python
(`backend='cpu'`), so both collectors are exercised.
"""

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from metaworld_x.training.config import PPOConfig, RunOptions

HORIZON = 50

# A PPO run that trains the point mass in seconds: six iterations, a checkpoint every three.
SMALL = PPOConfig(
    num_envs=32, unroll_length=8, num_minibatches=4, num_epochs=2, total_env_steps=32 * 8 * 6,
    eval_every=0, checkpoint_every=3, policy_hidden=(16,), value_hidden=(16,),
)


def quiet(**options) -> RunOptions:
    """Run options without a progress bar or TensorBoard files."""
    return RunOptions(progress=False, tensorboard=False, **options)


@struct.dataclass
class PointState:
    data: jax.Array  # [B, 4]: position, velocity
    goal: jax.Array  # [B, 2]
    obs: dict
    reward: jax.Array
    done: jax.Array
    metrics: dict
    info: dict


def _obs(data, goal):
    state = jnp.concatenate([data, goal - data[:, :2]], axis=-1)
    return {"state": state, "privileged_state": state}


def _reset(key, num_envs):
    k1, k2 = jax.random.split(key)
    pos = jax.random.uniform(k1, (num_envs, 2), minval=-1, maxval=1)
    goal = jax.random.uniform(k2, (num_envs, 2), minval=-1, maxval=1)
    data = jnp.concatenate([pos, jnp.zeros((num_envs, 2))], axis=-1)
    zeros = jnp.zeros(num_envs)
    return PointState(
        data, goal, _obs(data, goal), zeros, zeros,
        {"success": zeros, "reward/distance": zeros},
        {"truncation": zeros, "steps": zeros, "key": key},
    )


def _physics(data, action):
    vel = 0.8 * data[:, 2:] + 0.1 * action
    return jnp.concatenate([data[:, :2] + vel, vel], axis=-1)


def _outcome(state, data, action):
    distance = jnp.linalg.norm(state.goal - data[:, :2], axis=-1)
    reward = -distance - 0.01 * jnp.sum(action**2, axis=-1)
    steps = state.info["steps"] + 1
    truncation = (steps >= HORIZON).astype(jnp.float32)
    return reward, distance, steps, truncation


class PointMassEnv:
    observation_sizes = {"state": (6,), "privileged_state": (6,)}
    action_size = 2

    def __init__(self, num_envs: int, backend: str = "mjx"):
        self.num_envs = num_envs
        self.backend = backend

    def reset(self, key):
        return _reset(key, self.num_envs)

    def step(self, state, action):
        if self.backend == "cpu":  # numpy physics from Python, as mujoco.batch would be
            data = jnp.asarray(np.asarray(_physics(np.asarray(state.data), np.asarray(action))))
        else:
            data = _physics(state.data, action)
        reward, distance, steps, truncation = _outcome(state, data, action)
        done = truncation
        key = jax.random.fold_in(state.info["key"], 1)
        fresh = _reset(key, self.num_envs)
        keep = lambda new, old: jnp.where(done.reshape((-1,) + (1,) * (new.ndim - 1)) > 0, new, old)
        data_next = keep(fresh.data, data)
        goal_next = keep(fresh.goal, state.goal)
        return PointState(
            data_next, goal_next, _obs(data_next, goal_next), reward, done,
            {"success": (distance < 0.1).astype(jnp.float32), "reward/distance": -distance},
            {"truncation": truncation, "steps": steps * (1 - done), "key": key},
        )
