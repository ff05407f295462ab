"""Kinematic playback of a clip: the robot posed frame by frame, the scaled human drawn beside it."""

from __future__ import annotations

import time
from pathlib import Path

import mujoco
import numpy as np

from metaworld_x.atomic import atomic_path
from metaworld_x.motion.clip import Clip, load_clip

# Bones of the canonical human skeleton, drawn as capsules.
BONES = (
    ("pelvis", "left_hip"), ("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("left_ankle", "left_toe"),
    ("pelvis", "right_hip"), ("right_hip", "right_knee"), ("right_knee", "right_ankle"), ("right_ankle", "right_toe"),
    ("pelvis", "chest"), ("chest", "neck"), ("neck", "head"),
    ("neck", "left_shoulder"), ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"),
    ("neck", "right_shoulder"), ("right_shoulder", "right_elbow"), ("right_elbow", "right_wrist"),
)
_JOINT_RGBA = np.array([0.9, 0.5, 0.1, 1.0], dtype=np.float32)
_BONE_RGBA = np.array([0.95, 0.7, 0.3, 1.0], dtype=np.float32)
_BOX_RGBA = np.array([0.55, 0.4, 0.25, 0.6], dtype=np.float32)


def _scene_model() -> mujoco.MjModel:
    from metaworld_x.scene import build_model

    return build_model("floor", "h1")


def pose_robot(model: mujoco.MjModel, data: mujoco.MjData, clip: Clip, frame: int) -> None:
    """Set the robot to the clip's frame and run forward kinematics."""
    data.qpos[:] = model.qpos0
    data.qpos[:7] = np.concatenate([clip.root_pos[frame], clip.root_quat[frame]])
    from metaworld_x.motion.ik import joint_qpos_indices

    data.qpos[joint_qpos_indices(model)] = clip.joint_pos[frame]
    mujoco.mj_forward(model, data)


def draw_human(scene: mujoco.MjvScene, clip: Clip, frame: int, offset: np.ndarray) -> None:
    """Add the scaled human skeleton (and the object, if any) of `frame` to `scene`, shifted by `offset`."""
    points = {name: clip.human_pos[frame, i] + offset for i, name in enumerate(clip.human_names)}
    for point in points.values():
        _add_geom(scene, mujoco.mjtGeom.mjGEOM_SPHERE, np.array([0.035, 0, 0]), point, np.eye(3), _JOINT_RGBA)
    for a, b in BONES:
        if a in points and b in points and scene.ngeom < scene.maxgeom:
            mujoco.mjv_initGeom(scene.geoms[scene.ngeom], mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3),
                                np.zeros(3), np.zeros(9), _BONE_RGBA)
            mujoco.mjv_connector(scene.geoms[scene.ngeom], mujoco.mjtGeom.mjGEOM_CAPSULE, 0.02, points[a], points[b])
            scene.ngeom += 1
    if clip.object_pose is not None:
        from metaworld_x.scene.props import BOX_HALF_SIZE

        quat, pos = clip.object_pose[frame, :4].astype(np.float64), clip.object_pose[frame, 4:].astype(np.float64)
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, quat)
        _add_geom(scene, mujoco.mjtGeom.mjGEOM_BOX, np.array(BOX_HALF_SIZE), pos, rot.reshape(3, 3), _BOX_RGBA)


def _add_geom(scene, kind, size, pos, rot, rgba) -> None:
    if scene.ngeom >= scene.maxgeom:
        return
    mujoco.mjv_initGeom(scene.geoms[scene.ngeom], kind, size, pos, rot.reshape(-1), rgba)
    scene.ngeom += 1


def write_video(path: Path, out: Path, width: int, height: int, human_offset: float) -> Path:
    """Render the clip headless to an .mp4 (written atomically).

    `metaworld_x.render.render_frame` updates and renders in one call; the
    human is drawn between the two, so the renderer is driven directly here.
    """
    import imageio.v2 as imageio
    from tqdm import tqdm

    from metaworld_x.errors import UserError

    clip = load_clip(path)
    model = _scene_model()
    data = mujoco.MjData(model)
    try:
        renderer = mujoco.Renderer(model, height, width)
    except Exception as error:
        raise UserError(f"cannot create an OpenGL context for rendering ({error}); set MUJOCO_GL=egl") from None
    offset = np.array([0.0, human_offset, 0.0])
    try:
        with atomic_path(out) as tmp, imageio.get_writer(tmp, fps=clip.fps, macro_block_size=1) as writer:
            for frame in tqdm(range(clip.num_frames), desc=f"rendering {path.name}", leave=False):
                pose_robot(model, data, clip, frame)
                renderer.update_scene(data, camera="track")
                draw_human(renderer.scene, clip, frame, offset)
                writer.append_data(renderer.render())
    finally:
        renderer.close()
    print(f"{out}: {clip.num_frames} frames of {clip.skill!r} (robot; scaled human {human_offset:g} m to its left)")
    return out


def play_in_viewer(path: Path, human_offset: float, loops: int) -> None:
    """Play the clip in MuJoCo's passive viewer, the human in `viewer.user_scn`."""
    import mujoco.viewer

    clip = load_clip(path)
    model = _scene_model()
    data = mujoco.MjData(model)
    offset = np.array([0.0, human_offset, 0.0])
    with mujoco.viewer.launch_passive(model, data) as viewer:
        for _ in range(max(1, loops)):
            for frame in range(clip.num_frames):
                if not viewer.is_running():
                    return
                start = time.perf_counter()
                pose_robot(model, data, clip, frame)
                with viewer.lock():
                    viewer.user_scn.ngeom = 0
                    draw_human(viewer.user_scn, clip, frame, offset)
                viewer.sync()
                time.sleep(max(0.0, 1.0 / clip.fps - (time.perf_counter() - start)))
