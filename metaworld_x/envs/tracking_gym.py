"""Gymnasium envs of an expert's own tracking task, built from its spec (ids in `tracking_registration`).

They are `MetaWorldXEnv` / `MetaWorldXVectorEnv` around a different task:
the tracking task of `metaworld_x.experts.environment.expert_task(spec)`, with the
expert's action mapping, so `metaworld_x.experts.policy.act(params, obs)` of a
shipped expert is a valid action. Keyword arguments override fields of the
spec's TrackingConfig (e.g. `phase_zero_fraction=1.0` starts every episode
at the clip's first frame); `perturb=` names a perturbation suite, as for the task ids.
"""

import dataclasses

from metaworld_x.envs.gym_env import MetaWorldXEnv, MetaWorldXVectorEnv


def tracking_task(skill: str, **tracking):
    """The tracking task expert `skill` trains on, its TrackingConfig fields overridden by `tracking`."""
    from metaworld_x.experts.environment import expert_task
    from metaworld_x.experts.specs import expert_spec

    spec = expert_spec(skill)
    return expert_task(dataclasses.replace(spec, tracking={**spec.tracking, **tracking}))


class ExpertTrackingEnv(MetaWorldXEnv):
    """One world of expert `skill`'s tracking task (see the module docstring)."""

    def __init__(self, skill: str, render_mode: str | None = None, width: int = 640, height: int = 480,
                 perturb="none", **tracking):
        args = dict(skill=skill, render_mode=render_mode, width=width, height=height, perturb=perturb, **tracking)
        self._setup(tracking_task(skill, **tracking), args)


class ExpertTrackingVectorEnv(MetaWorldXVectorEnv):
    """`num_envs` worlds of expert `skill`'s tracking task in one `mujoco.batch`."""

    def __init__(self, skill: str, num_envs: int = 1, max_episode_steps: int | None = None, nthread: int | None = None,
                 perturb="none", **tracking):
        if max_episode_steps is not None:
            tracking["episode_length"] = max_episode_steps
        self._setup(tracking_task(skill, **tracking), num_envs, nthread, perturb)
