"""Headless rendering with `mujoco.Renderer`."""

import os
from pathlib import Path

import mujoco
import numpy as np

from metaworld_x.atomic import atomic_path
from metaworld_x.errors import UserError


def render_frame(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    camera: str = "track",
    width: int = 640,
    height: int = 480,
    renderer: "mujoco.Renderer | None" = None,
) -> np.ndarray:
    """One RGB frame [height, width, 3] uint8 from a named camera."""
    try:
        renderer = renderer or mujoco.Renderer(model, height, width)
    except Exception as error:
        raise UserError(
            f"cannot create an OpenGL context for rendering ({error}); set MUJOCO_GL=egl"
            f" (now {os.environ.get('MUJOCO_GL', 'unset')}) before mujoco is first imported"
        ) from None
    renderer.update_scene(data, camera=camera)
    return renderer.render()


def save_image(image: np.ndarray, path: str | Path) -> Path:
    """Write a PNG atomically: a killed run never leaves half an image."""
    import imageio.v3 as iio

    with atomic_path(path) as tmp:
        iio.imwrite(tmp, image, extension=Path(path).suffix or ".png")
    return Path(path)
