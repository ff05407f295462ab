"""Pick a physics backend for a task: `make("walk", backend="cpu", num_worlds=1024)`."""

from metaworld_x.envs.task import Task
from metaworld_x.errors import UserError

BACKENDS = ("cpu", "mjx")


def make(task: str | Task, backend: str = "cpu", num_worlds: int = 1, **options):
    """A batched environment of `num_worlds` worlds.

    Args:
      task: a task name (see `metaworld_x.envs.tasks.TASKS`) or a Task.
      backend: "cpu" (MuJoCo C through mujoco.batch) or "mjx" (MuJoCo XLA).
      num_worlds: B, the number of worlds stepped together.
      options: for "cpu": nthread, auto_reset; for "mjx": impl ("jax" or
        "warp"); for both: robot_path, physics (a `PhysicsOptions`: solver
        iterations, which robot geoms collide). Other keys are task settings, e.g.
        `target_speed=2.0` or `rewards={"locomotion": 2.0}`.

    Returns:
      A `CpuEnv` or an `MjxEnv`, each with `reset(rng) -> State` and
      `step(State, action) -> State`.
    """
    from metaworld_x.envs.tasks import make_task

    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}; backends: {', '.join(BACKENDS)}")
    env_keys = {"cpu": ("nthread", "auto_reset", "robot_path", "physics"), "mjx": ("impl", "robot_path", "physics")}[backend]
    env_options = {k: options.pop(k) for k in env_keys if k in options}
    if isinstance(task, str):
        task = make_task(task, **options)
    elif options:
        raise UserError(f"task settings {sorted(options)} apply to a task name, not to a Task instance")
    if backend == "cpu":
        from metaworld_x.envs.cpu_env import CpuEnv

        return CpuEnv(task, num_worlds, **env_options)
    from metaworld_x.envs.mjx_env import MjxEnv

    return MjxEnv(task, num_worlds, **env_options)
