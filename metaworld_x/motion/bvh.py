"""BVH clips as human motion: forward kinematics to z-up metres, with units and up axis made explicit.

`bvh_file.py` reads the file as written; this module interprets it. Forward
kinematics is vectorised (one scipy `Rotation` batch per joint over all
frames), not `bvhio`'s. Measured on `cmu/131_01.bvh` (994 frames, 31
joints): bvhio takes about 1.8 s (1.4 s to build its hierarchy, then a
Python loop per frame and joint for world positions), this module about
0.15 s, and the two agree to 1e-5 file units.

Conventions, written down because BVH leaves them open:

- Rotation channels are intrinsic Euler angles in degrees in the order the
  CHANNELS line lists them: `Zrotation Xrotation Yrotation` is Rz @ Rx @ Ry.
- Position channels replace the matching OFFSET component (the usual
  reading; CMU's root OFFSET is zero, so the two readings agree there).
- Units and up axis are never assumed silently. Unless given, the units
  come from the rest-pose height (an adult skeleton stands about 1.5 m from
  toe joint to head end) and the up axis from the rest pose's head direction.
  What was used, and whether it was given or detected, is logged and stored
  in `HumanMotion.metadata`.
- Y-up files are turned z-up by the rotation (x, y, z) -> (z, x, y), which
  takes BVH's forward (+z) to +x and the character's left to +y.
- End Sites (the `<parent>_end` joints of `bvh_file.py`) are oriented like
  their parent.
- cgspeed's CMU conversions may start with an added T-pose frame. With
  `skip_frames=None` the first frame is dropped only when it is a rest pose
  (every non-root rotation zero) and the next frame is not; pass an int to
  skip exactly that many frames. (The two shared `cmu/131_0x.bvh` files have
  no such frame: frame 0 is already motion, continuous with frame 1.)
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.bvh_file import POSITION_CHANNELS, ROTATION_CHANNELS, BvhFile, BvhJoint, parse_bvh
from metaworld_x.motion.human import HumanMotion, rotate_frame, z_up_rotation

logger = logging.getLogger(__name__)

# Metres per file unit. CMU's unit is (1 / 0.45) inch (mocap.cs.cmu.edu FAQ).
UNITS_TO_METRES = {"m": 1.0, "cm": 0.01, "mm": 0.001, "inch": 0.0254, "cmu": 0.0254 / 0.45}
# Toe joint to head end site of an adult skeleton in its rest pose, in
# metres; detection picks the unit that brings the file closest to it and
# refuses when even the best is off by more than the tolerance factor.
_REST_HEIGHT_M = 1.5
_REST_HEIGHT_TOLERANCE = 1.5
UP_AXES = {"y": z_up_rotation("y", "z"), "z": np.eye(3)}
# A frame-0 rest pose has every non-root rotation at zero (to this many
# degrees) while real motion in the next frame moves at least one joint.
_REST_POSE_MAX_DEG = 1e-3
_MOTION_MIN_DEG = 1.0


def load_bvh(
    path: str | Path,
    *,
    scale: float | None = None,
    up_axis: str | None = None,
    units: str | None = None,
    skip_frames: int | None = None,
) -> HumanMotion:
    """Load a BVH clip as world joint positions in metres, z-up.

    Args:
      path: the .bvh file.
      scale: metres per file unit; overrides unit detection.
      up_axis: 'y' or 'z', the file's up axis; detected from the rest pose if None.
      units: one of UNITS_TO_METRES ('m', 'cm', 'mm', 'inch', 'cmu'); detected if None.
      skip_frames: frames to drop from the start; None drops an added T-pose frame
        only when one is detected (see the module docstring).
    """
    path = Path(path)
    bvh = parse_bvh(path)
    rest = rest_positions(bvh.joints)
    up_axis, up_source = _resolve_up_axis(path, bvh.joints, rest, up_axis)
    rest_height = float(np.ptp(rest[:, "xyz".index(up_axis)]))
    units, scale, units_source = _resolve_scale(path, rest_height, units, scale)
    skip, tpose = _resolve_skip(path, bvh, skip_frames)

    positions, rotations = forward_kinematics(bvh.joints, bvh.frames[skip:])
    positions, rotations = rotate_frame(UP_AXES[up_axis], positions * scale, rotations)
    metadata = {
        "format": "bvh",
        "units": units,
        "scale": scale,
        "units_source": units_source,
        "up_axis": up_axis,
        "up_axis_source": up_source,
        "rest_height": rest_height,
        "frame_time": bvh.frame_time,
        "skipped_frames": skip,
        "tpose_detected": tpose,
    }
    if "detected" in (units_source, up_source):
        logger.info(
            "%s: units %r (%s; rest pose %.2f units = %.2f m tall), up axis %r (%s); "
            "pass units=/scale=/up_axis= to override",
            path, units, units_source, rest_height, rest_height * scale, up_axis, up_source,
        )
    return HumanMotion(
        joint_names=tuple(joint.name for joint in bvh.joints),
        parents=tuple(joint.parent for joint in bvh.joints),
        positions=positions,
        fps=_fps_from_frame_time(bvh.frame_time),
        source=str(path),
        rotations=rotations,
        metadata=metadata,
    )


def forward_kinematics(
    joints: tuple[BvhJoint, ...], frames: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """World positions [T, J, 3] (file units and axes) and orientations [T, J, 4] (w, x, y, z).

    Args:
      joints: hierarchy, parents before children.
      frames: [T, C] channel values.
    """
    count = frames.shape[0]
    positions = np.zeros((count, len(joints), 3))
    world: list[Rotation] = []
    for index, joint in enumerate(joints):
        translation = np.tile(joint.offset, (count, 1))
        axes, angle_columns = "", []
        for column, channel in enumerate(joint.channels, start=joint.first_column):
            if channel in POSITION_CHANNELS:
                translation[:, POSITION_CHANNELS[channel]] = frames[:, column]
            else:
                axes += ROTATION_CHANNELS[channel]
                angle_columns.append(column)
        if axes:
            local = Rotation.from_euler(axes, frames[:, angle_columns], degrees=True)
        else:
            local = Rotation.identity(count)
        if joint.parent < 0:
            positions[:, index] = translation
            world.append(local)
        else:
            parent = world[joint.parent]
            positions[:, index] = positions[:, joint.parent] + parent.apply(translation)
            world.append(parent * local)
    rotations = np.stack([rotation.as_quat(scalar_first=True) for rotation in world], axis=1)
    return positions, rotations


def rest_positions(joints: tuple[BvhJoint, ...]) -> np.ndarray:
    """[J, 3] joint positions with every channel at zero: offsets summed down the tree."""
    rest = np.zeros((len(joints), 3))
    for index, joint in enumerate(joints):
        rest[index] = joint.offset + (rest[joint.parent] if joint.parent >= 0 else 0.0)
    return rest


def _resolve_up_axis(
    path: Path, joints: tuple[BvhJoint, ...], rest: np.ndarray, up_axis: str | None
) -> tuple[str, str]:
    if up_axis is not None:
        if up_axis not in UP_AXES:
            raise UserError(f"{path}: up_axis must be one of {sorted(UP_AXES)}, got {up_axis!r}")
        return up_axis, "given"
    heads = [i for i, joint in enumerate(joints) if joint.channels and joint.name.lower().endswith("head")]
    if not heads:
        logger.warning("%s: no head joint to detect the up axis from; using BVH's convention, y", path)
        return "y", "convention"
    direction = rest[heads[0]] - rest[0]
    axis = int(np.argmax(np.abs(direction)))
    name = "xyz"[axis]
    if direction[axis] <= 0 or name not in UP_AXES:
        raise UserError(
            f"{path}: in the rest pose the head lies along {'-' if direction[axis] < 0 else '+'}{name} "
            f"from the root, which is not a supported up axis; pass up_axis= ({' or '.join(UP_AXES)})"
        )
    return name, "detected"


def _resolve_scale(
    path: Path, rest_height: float, units: str | None, scale: float | None
) -> tuple[str, float, str]:
    if units is not None and units not in UNITS_TO_METRES:
        raise UserError(f"{path}: units must be one of {sorted(UNITS_TO_METRES)}, got {units!r}")
    if scale is not None:
        if not (math.isfinite(scale) and scale > 0):
            raise UserError(f"{path}: scale must be a positive number of metres per unit, got {scale}")
        if units is not None and not math.isclose(scale, UNITS_TO_METRES[units], rel_tol=1e-6):
            raise UserError(
                f"{path}: units={units!r} means scale {UNITS_TO_METRES[units]:.6g}, but scale={scale} was given; pass one"
            )
        return units or "custom", float(scale), "given"
    if units is not None:
        return units, UNITS_TO_METRES[units], "given"
    if rest_height <= 0:
        raise UserError(f"{path}: the rest pose is flat along the up axis; pass units= or scale=")
    misfit = lambda name: abs(math.log(rest_height * UNITS_TO_METRES[name] / _REST_HEIGHT_M))  # noqa: E731
    best = min(UNITS_TO_METRES, key=misfit)
    if misfit(best) > math.log(_REST_HEIGHT_TOLERANCE):
        raise UserError(
            f"{path}: cannot tell the units: the rest pose is {rest_height:.4g} units tall, which fits "
            f"no human in {sorted(UNITS_TO_METRES)}; pass units= or scale= (metres per unit)"
        )
    return best, UNITS_TO_METRES[best], "detected"


def _resolve_skip(path: Path, bvh: BvhFile, skip_frames: int | None) -> tuple[int, bool]:
    tpose = _starts_with_rest_pose(bvh)
    skip = int(tpose) if skip_frames is None else int(skip_frames)
    if not 0 <= skip < len(bvh.frames):
        raise UserError(f"{path}: skip_frames={skip_frames} leaves no frames of {len(bvh.frames)}")
    return skip, tpose


def _starts_with_rest_pose(bvh: BvhFile) -> bool:
    columns = [
        column
        for joint in bvh.joints
        if joint.parent >= 0
        for column, channel in enumerate(joint.channels, start=joint.first_column)
        if channel in ROTATION_CHANNELS
    ]
    if len(bvh.frames) < 2 or not columns:
        return False
    first, second = np.abs(bvh.frames[:2, columns])
    return bool(first.max() <= _REST_POSE_MAX_DEG and second.max() >= _MOTION_MIN_DEG)


def _fps_from_frame_time(frame_time: float) -> float:
    fps = 1.0 / frame_time
    # Frame times are printed rounded (.0083333 for 120 fps); snap to the
    # whole rate they stand for, but leave true fractional rates (29.97) alone.
    return float(round(fps)) if abs(fps - round(fps)) < 1e-4 * fps else fps
