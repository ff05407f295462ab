"""Gymnasium wrappers: one world (`MetaWorldXEnv`) and many (`MetaWorldXVectorEnv`).

Both run on the cpu backend (MuJoCo's C engine); the single env is a batch of
one world on one thread. Headless rendering uses EGL, which `metaworld_x`
selects on import when there is no display. Episode length is left to gymnasium: the single env
is registered with `max_episode_steps` (TimeLimit), and the vector env
receives it and ends episodes itself. `perturb=` runs either under a perturbation suite
(`metaworld_x.envs.perturb`): `gymnasium.make("MetaWorldX/H1-Walk-v0", perturb="push")`.
"""

import os
import sys

import gymnasium as gym
import jax
import mujoco
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from metaworld_x.envs.cpu_env import CpuEnv
from metaworld_x.envs.perturb import perturbed
from metaworld_x.envs.tasks import make_task

RENDER_CAMERA = "track"


def _has_display() -> bool:
    # GLFW aborts the process, rather than raising, when it finds no display
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _spaces(env: CpuEnv, obs_size: int):
    observation = gym.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)
    action = gym.spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)
    return observation, action


def _step_info(env: CpuEnv, state, world: int | slice) -> dict:
    """Reward terms (they sum to the reward), success, why the episode ended, and the physics state."""
    info = {name: np.asarray(value)[world] for name, value in state.metrics.items()}
    codes = np.asarray(state.info["termination_reason"])[world]
    info["success"] = np.asarray(state.metrics["success"])[world] > 0
    info["termination_reason"] = (
        env.reason_names[int(codes)] if np.ndim(codes) == 0 else np.asarray(env.reason_names, dtype=object)[codes]
    )
    # the whole state, which the observation leaves partly out (root x, y, the props): what an agent that
    # rebuilds another observation from the physics reads (metaworld_x.ExpertAgent)
    info["qpos"] = np.array(state.data.view.qpos[world])
    info["qvel"] = np.array(state.data.view.qvel[world])
    return info


class MetaWorldXEnv(gym.Env):
    """One world of a MetaWorld-X task, stepped by MuJoCo's C engine.

    Observation: the task's policy observation (`obs["state"]`). Action:
    [-1, 1]^19, servo targets around the home pose. `info` holds each scaled
    reward term as `reward/<name>` (they sum to the reward), `success`,
    `termination_reason` ("none", "fall", "nonfinite_action", ...), and the
    physics state `qpos` [nq] and `qvel` [nv] (the whole model's, robot first).
    `perturb`: a perturbation suite (none, push, model, latency, noise, all) or a PerturbConfig.
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 50}

    def __init__(self, task: str, render_mode: str | None = None, width: int = 640, height: int = 480,
                 perturb="none", **settings):
        args = dict(task=task, render_mode=render_mode, width=width, height=height, perturb=perturb, **settings)
        self._setup(make_task(task, **settings), args)

    def _setup(self, task, args: dict) -> None:
        """Build one world of the Task `task`; `args` rebuild this env when unpickled."""
        render_mode, width, height = args["render_mode"], args["width"], args["height"]
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self._args = args
        self.render_mode, self._size = render_mode, (height, width)
        self._env = perturbed(CpuEnv(task, 1, nthread=1, auto_reset=False), args.get("perturb"))
        self._state = self._env.reset(jax.random.PRNGKey(0))
        self.observation_space, self.action_space = _spaces(self._env, self._state.obs["state"].shape[-1])
        self.metadata = {**self.metadata, "render_fps": int(round(1 / self._env.compiled.control_dt))}
        self._renderer = self._viewer = self._render_data = None

    @property
    def task(self):
        """The Task simulated (metaworld_x.envs.task.Task)."""
        return self._env.task

    # pickling rebuilds the env from its arguments; reset() it after loading
    def __getstate__(self):
        return self._args

    def __setstate__(self, args):
        self.__init__(**args)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        key = jax.random.PRNGKey(int(self.np_random.integers(2**31)))
        self._state = self._env.reset(key)
        if self.render_mode == "human":
            self.render()
        return np.array(self._state.obs["state"][0]), _step_info(self._env, self._state, 0)

    def step(self, action):
        action = np.asarray(action, np.float32)
        if action.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {action.shape}")
        self._state = self._env.step(self._state, action[None])
        state = self._state
        done, truncation = bool(state.done[0]), bool(state.info["truncation"][0])
        if self.render_mode == "human":
            self.render()
        obs = np.array(state.obs["state"][0])
        reward = float(state.reward[0])
        return obs, reward, done and not truncation, truncation, _step_info(self._env, state, 0)

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' or 'human' to make()")
            return None
        model = self._env.compiled.model
        self._render_data = self._env.batch.get_data(0, self._render_data)
        mujoco.mj_forward(model, self._render_data)
        if self.render_mode == "rgb_array":
            if self._renderer is None:
                self._renderer = mujoco.Renderer(model, *self._size)
            self._renderer.update_scene(self._render_data, camera=RENDER_CAMERA)
            return self._renderer.render()
        return self._render_human(model)

    def _render_human(self, model):
        if self._viewer is None:
            self._viewer = False
            if _has_display():
                try:
                    import mujoco.viewer

                    self._viewer = mujoco.viewer.launch_passive(model, self._render_data)
                except Exception as error:  # no GL, or macOS without mjpython
                    print(f"metaworld_x: no live viewer ({type(error).__name__}: {error}); continuing without one")
            else:
                print("metaworld_x: no display for render_mode='human'; continuing without a viewer")
        if self._viewer:
            self._viewer.sync()
        return None

    def close(self):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._viewer:
            self._viewer.close()
        self._viewer = None


class MetaWorldXVectorEnv(VectorEnv):
    """`num_envs` worlds of a task in one `mujoco.batch` (the cpu backend), for `gymnasium.make_vec`.

    Worlds reset themselves in the step that ends them (autoreset mode
    SAME_STEP): the returned observation is the new episode's first, and
    `info["final_obs"]` (masked by `info["_final_obs"]`) the old one's last.
    `info` holds what the single env's does, each with a leading [num_envs]. `perturb`: as the single env's.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, task: str, num_envs: int = 1, max_episode_steps: int | None = None, nthread: int | None = None,
                 perturb="none", **settings):
        if max_episode_steps is not None:
            settings["episode_length"] = max_episode_steps
        self._setup(make_task(task, **settings), num_envs, nthread, perturb)

    def _setup(self, task, num_envs: int, nthread: int | None, perturb="none") -> None:
        """Build `num_envs` worlds of the Task `task` in one batch, under the perturbation suite `perturb`."""
        self._env = perturbed(CpuEnv(task, num_envs, nthread=nthread, auto_reset=True), perturb)
        self._state = self._env.reset(jax.random.PRNGKey(0))
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(
            self._env, self._state.obs["state"].shape[-1]
        )
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = None

    @property
    def task(self):
        """The Task simulated (metaworld_x.envs.task.Task)."""
        return self._env.task

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        key = jax.random.PRNGKey(int(self.np_random.integers(2**31)))
        self._state = self._env.reset(key)
        return np.array(self._state.obs["state"]), _step_info(self._env, self._state, slice(None))

    def step(self, actions):
        actions = np.asarray(actions, np.float32)
        if actions.shape != self.action_space.shape:
            raise ValueError(f"actions must have shape {self.action_space.shape}, got {actions.shape}")
        self._state = state = self._env.step(self._state, actions)
        done, truncation = np.asarray(state.done), np.asarray(state.info["truncation"])
        info = _step_info(self._env, state, slice(None))
        info["final_obs"] = np.array(state.info["final_obs"]["state"])
        info["_final_obs"] = done
        return np.array(state.obs["state"]), np.array(state.reward), done & ~truncation, truncation, info
