"""DeepMimic motion files: local joint rotations of the humanoid3d character.

A file is JSON, `{"Loop": "wrap" | "none", "Frames": [[44 numbers], ...]}`.
Each frame holds its duration (s), the root position (m, y-up, world), the
root orientation, then each joint's local rotation: a quaternion (w, x, y, z)
for spherical joints, an angle (rad) about the joint's z axis for the knees
and elbows. Frames may last different times; the loader interpolates the
rotations (slerp) and root position (linear) onto a uniform clock and then
runs forward kinematics on humanoid3d's fixed joint offsets.

The character faces +x in its y-up world (its right hip is at +z), so the
z-up conversion is the rotation (x, y, z) -> (x, -z, y): forward stays +x
and the character's left becomes +y.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.human import (
    HumanMotion,
    frame_weights,
    lerp_frames,
    rotate_frame,
    slerp_frames,
    uniform_times,
    z_up_rotation,
)

# humanoid3d's joints from xbpeng/DeepMimic data/characters/humanoid3d.txt
# ("Skeleton": Parent, AttachX/Y/Z in metres, y-up; every AttachTheta is 0):
# (name, parent, offset from the parent joint). Parents come first.
SKELETON: tuple[tuple[str, str | None, tuple[float, float, float]], ...] = (
    ("root", None, (0.0, 0.0, 0.0)),
    ("chest", "root", (0.0, 0.236151, 0.0)),
    ("neck", "chest", (0.0, 0.223894, 0.0)),
    ("right_hip", "root", (0.0, 0.0, 0.084887)),
    ("right_knee", "right_hip", (0.0, -0.421546, 0.0)),
    ("right_ankle", "right_knee", (0.0, -0.409870, 0.0)),
    ("right_shoulder", "chest", (-0.02405, 0.24350, 0.18311)),
    ("right_elbow", "right_shoulder", (0.0, -0.274788, 0.0)),
    ("right_wrist", "right_elbow", (0.0, -0.258947, 0.0)),
    ("left_hip", "root", (0.0, 0.0, -0.084887)),
    ("left_knee", "left_hip", (0.0, -0.421546, 0.0)),
    ("left_ankle", "left_knee", (0.0, -0.409870, 0.0)),
    ("left_shoulder", "chest", (-0.02405, 0.24350, -0.18311)),
    ("left_elbow", "left_shoulder", (0.0, -0.274788, 0.0)),
    ("left_wrist", "left_elbow", (0.0, -0.258947, 0.0)),
)
# Points on bodies that retargeting needs but that are not joints, from the
# same file's "BodyDefs": the centre of the head sphere (the neck body) and
# the front of each foot box (centre 0.045 m ahead of the ankle, 0.177 m long).
SITES: tuple[tuple[str, str, tuple[float, float, float]], ...] = (
    ("head", "neck", (0.0, 0.175, 0.0)),
    ("right_toe", "right_ankle", (0.045 + 0.177 / 2, -0.0225, 0.0)),
    ("left_toe", "left_ankle", (0.045 + 0.177 / 2, -0.0225, 0.0)),
)
# A frame after duration, root position and root orientation: each moving
# joint's local rotation, as 4 quaternion numbers or 1 angle about z.
FRAME_LAYOUT: tuple[tuple[str, int], ...] = (
    ("chest", 4), ("neck", 4),
    ("right_hip", 4), ("right_knee", 1), ("right_ankle", 4), ("right_shoulder", 4), ("right_elbow", 1),
    ("left_hip", 4), ("left_knee", 1), ("left_ankle", 4), ("left_shoulder", 4), ("left_elbow", 1),
)
FRAME_WIDTH = 1 + 3 + 4 + sum(width for _, width in FRAME_LAYOUT)
Y_UP_TO_Z_UP = z_up_rotation("y", "x")


def is_deepmimic_file(path: str | Path) -> bool:
    """Whether the file is a JSON object with a "Frames" list (DeepMimic's layout)."""
    try:
        content = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(content, dict) and isinstance(content.get("Frames"), list)


def load_deepmimic(path: str | Path, *, fps: float | None = None) -> HumanMotion:
    """Load a DeepMimic humanoid3d motion as world joint positions in metres, z-up.

    Args:
      path: the .txt / .json motion file.
      fps: output frame rate; None takes the rate of the median frame duration.
    """
    path = Path(path)
    loop, frames = _read_frames(path)
    durations = frames[:, 0]
    # A frame's duration is the time to the next one; the last is unused.
    times = np.concatenate([[0.0], np.cumsum(durations[:-1])])
    if np.any(durations[:-1] <= 0):
        bad = int(np.flatnonzero(durations[:-1] <= 0)[0])
        raise UserError(f"{path}: frame {bad} lasts {durations[bad]} s; every frame but the last must last > 0 s")
    fps, fps_source = _resolve_fps(path, durations, fps)

    first, weight = frame_weights(times, uniform_times(times[-1], fps))
    root_position = lerp_frames(frames[:, 1:4], first, weight)
    local = slerp_frames(_local_rotations(path, frames), first, weight)
    positions, rotations = forward_kinematics(root_position, local)
    positions, rotations = rotate_frame(Y_UP_TO_Z_UP, positions, rotations)

    names = [name for name, _, _ in SKELETON] + [name for name, _, _ in SITES]
    return HumanMotion(
        joint_names=tuple(names),
        parents=tuple(names.index(parent) if parent else -1 for _, parent, _ in SKELETON + SITES),
        positions=positions,
        fps=fps,
        source=str(path),
        rotations=rotations,
        metadata={
            "format": "deepmimic",
            "units": "m",
            "up_axis": "y",
            "loop": loop,
            "source_frames": len(frames),
            "source_duration": float(times[-1]),
            "fps_source": fps_source,
        },
    )


def forward_kinematics(root_position: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World positions [T, J + S, 3] and orientations [T, J + S, 4] (w, x, y, z), y-up.

    Args:
      root_position: [T, 3] root position, metres, y-up.
      local: [T, J, 4] local rotation (w, x, y, z) of each SKELETON joint; the
        root's is its world orientation.
    """
    names = [name for name, _, _ in SKELETON]
    world: list[Rotation] = []
    positions = []
    for index, (_, parent, offset) in enumerate(SKELETON):
        rotation = Rotation.from_quat(local[:, index], scalar_first=True)
        if parent is None:
            positions.append(root_position)
            world.append(rotation)
        else:
            up = names.index(parent)
            positions.append(positions[up] + world[up].apply(offset))
            world.append(world[up] * rotation)
    for _, parent, offset in SITES:
        up = names.index(parent)
        positions.append(positions[up] + world[up].apply(offset))
        world.append(world[up])
    rotations = np.stack([rotation.as_quat(scalar_first=True) for rotation in world], axis=1)
    return np.stack(positions, axis=1), rotations


def _read_frames(path: Path) -> tuple[str, np.ndarray]:
    try:
        content = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read the DeepMimic file ({error})") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{path}, line {error.lineno}: not valid JSON ({error.msg})") from None
    if not isinstance(content, dict) or not isinstance(content.get("Frames"), list):
        raise UserError(f'{path}: a DeepMimic motion is a JSON object with a "Frames" list')
    rows = content["Frames"]
    if not rows:
        raise UserError(f"{path}: the motion has no frames")
    for index, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != FRAME_WIDTH:
            size = len(row) if isinstance(row, list) else type(row).__name__
            raise UserError(f"{path}: frame {index} has {size} values; humanoid3d frames have {FRAME_WIDTH}")
    try:
        frames = np.array(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise UserError(f"{path}: frames must hold numbers only") from None
    if not np.isfinite(frames).all():
        raise UserError(f"{path}: frame {int(np.argwhere(~np.isfinite(frames))[0][0])} holds a non-finite value")
    return str(content.get("Loop", "none")), frames


def _resolve_fps(path: Path, durations: np.ndarray, fps: float | None) -> tuple[float, str]:
    if fps is not None:
        if not (np.isfinite(fps) and fps > 0):
            raise UserError(f"{path}: fps must be a positive number, got {fps}")
        return float(fps), "given"
    if len(durations) < 2:
        return 30.0, "single frame; 30 by default"
    return float(round(1.0 / np.median(durations[:-1]))), "median frame duration"


def _local_rotations(path: Path, frames: np.ndarray) -> np.ndarray:
    """[T, J, 4] unit quaternions (w, x, y, z) for every SKELETON joint, root first."""
    local = np.zeros((len(frames), len(SKELETON), 4))
    local[..., 0] = 1.0  # the wrists are fixed joints
    names = [name for name, _, _ in SKELETON]
    local[:, 0] = frames[:, 4:8]
    column = 8
    for name, width in FRAME_LAYOUT:
        values = frames[:, column : column + width]
        if width == 4:
            local[:, names.index(name)] = values
        else:
            half = values[:, 0] / 2.0
            local[:, names.index(name)] = np.stack([np.cos(half), 0 * half, 0 * half, np.sin(half)], axis=-1)
        column += width
    norms = np.linalg.norm(local, axis=-1)
    if np.any(norms < 0.5):
        frame, joint = np.argwhere(norms < 0.5)[0]
        raise UserError(f"{path}: frame {frame} has a zero quaternion for joint {names[joint]!r}")
    return local / norms[..., None]
