"""Gymnasium envs of an expert's own tracking task, built from its spec (ids in `tracking_registration`).

They are `MetaWorldXEnv` / `MetaWorldXVectorEnv` around a different task:
the tracking task of `metaworld_x.envs.expert.expert_task(spec)`, with the
expert's action mapping, so `metaworld_x.policy.act(params, obs)` of a
shipped expert is a valid action. Keyword arguments override fields of the
spec's TrackingConfig (e.g. `phase_zero_fraction=1.0` starts every episode
at the clip's first frame).

The parents build their task from a task name inside `__init__`; these
classes set up the same fields around a task built from the spec.
"""

import dataclasses

import jax
from gymnasium.vector.utils import batch_space

from metaworld_x.envs.cpu_env import CpuEnv
from metaworld_x.envs.gym_env import MetaWorldXEnv, MetaWorldXVectorEnv, _spaces


def tracking_task(skill: str, **tracking):
    """The tracking task expert `skill` trains on, its TrackingConfig fields overridden by `tracking`."""
    from metaworld_x.envs.expert import expert_task
    from metaworld_x.expert_specs import expert_spec

    spec = expert_spec(skill)
    return expert_task(dataclasses.replace(spec, tracking={**spec.tracking, **tracking}))


class ExpertTrackingEnv(MetaWorldXEnv):
    """One world of expert `skill`'s tracking task (see the module docstring)."""

    def __init__(self, skill: str, render_mode: str | None = None, width: int = 640, height: int = 480, **tracking):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self._args = dict(skill=skill, render_mode=render_mode, width=width, height=height, **tracking)
        self.render_mode, self._size = render_mode, (height, width)
        self._env = CpuEnv(tracking_task(skill, **tracking), 1, nthread=1, auto_reset=False)
        self._state = self._env.reset(jax.random.PRNGKey(0))
        self.observation_space, self.action_space = _spaces(self._env, self._state.obs["state"].shape[-1])
        self.metadata = {**self.metadata, "render_fps": int(round(1 / self._env.compiled.control_dt))}
        self._renderer = self._viewer = self._render_data = None


class ExpertTrackingVectorEnv(MetaWorldXVectorEnv):
    """`num_envs` worlds of expert `skill`'s tracking task in one `mujoco.batch`."""

    def __init__(self, skill: str, num_envs: int = 1, max_episode_steps: int | None = None, nthread: int | None = None,
                 **tracking):
        if max_episode_steps is not None:
            tracking["episode_length"] = max_episode_steps
        self._env = CpuEnv(tracking_task(skill, **tracking), num_envs, nthread=nthread, auto_reset=True)
        self._state = self._env.reset(jax.random.PRNGKey(0))
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(self._env, self._state.obs["state"].shape[-1])
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = None
