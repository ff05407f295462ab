"""The frame a VLM scorer sees: a small render from the robot's tracking camera."""

import numpy as np

from metaworld_x.errors import UserError


def render_for_vlm(model, data, camera: str | int = "track", size: tuple[int, int] = (224, 224), renderer=None):
    """uint8 [height, width, 3] frame of `data` from `camera`, for `ExpertScorer.score`.

    size: (height, width). camera: a camera name, a camera id, or -1 for the
    free camera. renderer: a `mujoco.Renderer` of that size to reuse across
    calls (creating one costs an OpenGL context).
    """
    import mujoco

    from metaworld_x.render import render_frame

    height, width = size
    if isinstance(camera, str) and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera) < 0:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
        raise UserError(
            f"the model has no camera {camera!r}; it has {', '.join(map(str, names)) or 'none'}"
            " (pass camera=-1 for the free camera)"
        )
    offscreen = (model.vis.global_.offwidth, model.vis.global_.offheight)
    if width > offscreen[0] or height > offscreen[1]:
        raise UserError(
            f"a {width}x{height} frame is larger than the model's offscreen buffer {offscreen[0]}x{offscreen[1]};"
            " raise <visual><global offwidth=.. offheight=..> in the MJCF or ask for a smaller size"
        )
    frame = render_frame(model, data, camera=camera, width=width, height=height, renderer=renderer)
    return np.ascontiguousarray(frame, dtype=np.uint8)
