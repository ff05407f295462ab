"""An expert's environment: its reference clips tracked while solving its task."""

from metaworld_x.envs.task import with_overrides
from metaworld_x.envs.tasks.tracking import Tracking, TrackingConfig
from metaworld_x.experts.specs import EXPERT_ACTION_SCALE, ExpertSpec



def expert_task(spec: ExpertSpec) -> Tracking:
    """The Tracking task of an expert spec, with its objective if it has one."""
    from metaworld_x.envs.tasks import make_task

    objective = make_task(spec.objective, **spec.objective_overrides) if spec.objective else None
    settings = {"clips": spec.clips, "loop": spec.loop, "action_scale": EXPERT_ACTION_SCALE, **spec.tracking}
    if objective is not None:
        settings.setdefault("frame_skip", objective.config.frame_skip)
    return Tracking(with_overrides(TrackingConfig(), settings), objective=objective)


def make_env(task, num_envs: int, backend: str = "cpu", **kwargs):
    """`num_envs` worlds of `task` on the cpu (mujoco.batch) or mjx backend."""
    if backend == "cpu":
        from metaworld_x.envs.cpu_env import CpuEnv

        return CpuEnv(task, num_envs, **kwargs)
    if backend == "mjx":
        from metaworld_x.envs.mjx_env import MjxEnv

        return MjxEnv(task, num_envs, **kwargs)
    from metaworld_x.errors import UserError

    raise UserError(f"unknown backend {backend!r}; choose cpu (mujoco.batch) or mjx (GPU)")
