"""Task environments on two physics backends, and their gymnasium wrappers.

    from metaworld_x.envs import make
    env = make("walk", backend="cpu", num_worlds=1024)   # or backend="mjx"
    state = env.reset(jax.random.PRNGKey(0))
    state = env.step(state, actions)                     # actions: [B, 19] in [-1, 1]

Modules (one idea each):
- `task`: the Task interface and its config; `tasks/`: one task per file.
- `physics_view`: the engine-neutral PhysicsView tasks read.
- `rewards`, `observations`, `actions`: shared building blocks.
- `control_step`: the engine-neutral halves of a step (reward, termination, reset).
- `cpu_env` (mujoco.batch) and `mjx_env` (MJX): the two backends.
- `randomize`: domain randomisation as pure functions.
- `registration`, `gym_env`: gymnasium ids and wrappers.

Importing this package is cheap: names are loaded on first use, so that
`metaworld_x.envs.registration` can be imported without jax or mujoco.
"""

import importlib

_EXPORTS = {
    "make": "metaworld_x.envs.backends",
    "BACKENDS": "metaworld_x.envs.backends",
    "TASKS": "metaworld_x.envs.tasks",
    "make_task": "metaworld_x.envs.tasks",
    "Task": "metaworld_x.envs.task",
    "TaskConfig": "metaworld_x.envs.task",
    "RewardScales": "metaworld_x.envs.task",
    "State": "metaworld_x.envs.state",
    "PhysicsInit": "metaworld_x.envs.state",
    "PhysicsView": "metaworld_x.envs.physics_view",
    "ViewLayout": "metaworld_x.envs.physics_view",
    "CpuEnv": "metaworld_x.envs.cpu_env",
    "MjxEnv": "metaworld_x.envs.mjx_env",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'metaworld_x.envs' has no attribute {name!r}")
