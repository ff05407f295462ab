"""MetaWorld-X: a hierarchical humanoid loco-manipulation stack.

Importing this package is cheap on purpose: it pulls in neither torch,
transformers nor brax. Heavy modules are imported where they are used.
"""

import os

__version__ = "0.1.0"

# MuJoCo picks its OpenGL backend when it is first imported. Without a display
# only EGL can render, so choose it before anything imports mujoco; a user's
# own MUJOCO_GL always wins. Only where libEGL exists, though: MuJoCo loads the
# chosen backend on import, so choosing EGL on a machine without it (a bare GPU
# server) would make `import mujoco` fail even for work that never renders.
if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    import ctypes.util

    if ctypes.util.find_library("EGL"):
        os.environ.setdefault("MUJOCO_GL", "egl")

import metaworld_x.envs.registration  # noqa: E402,F401  (gymnasium ids; imports gymnasium only)


def __getattr__(name: str):
    # `metaworld_x.ExpertAgent` without importing jax and mujoco on `import metaworld_x`
    if name == "ExpertAgent":
        from metaworld_x.experts.agent import ExpertAgent

        return ExpertAgent
    raise AttributeError(f"module 'metaworld_x' has no attribute {name!r}")
