"""BVH files: hierarchy, channels in any order, forward kinematics to z-up metres.

Parser choice: a hand parser with vectorised forward kinematics (one scipy
`Rotation` batch per joint over all frames), not `bvhio`. Measured on
`cmu/131_01.bvh` (994 frames, 31 joints): bvhio takes about 1.8 s (1.4 s to
build its hierarchy, then a Python loop per frame and joint for world
positions), this module about 0.15 s, and the two agree to 1e-5 file units.
bvhio also loops forever on a truncated MOTION section and answers a short
frame line with a bare IndexError, naming neither the file nor the line.

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
- End Sites become joints named `<parent>_end` (head top, toe and finger
  tips), oriented like their parent.
- cgspeed's CMU conversions may start with an added T-pose frame. With
  `skip_frames=None` the first frame is dropped only when it is a rest pose
  (every non-root rotation zero) and the next frame is not; pass an int to
  skip exactly that many frames. (The two shared `cmu/131_0x.bvh` files have
  no such frame: frame 0 is already motion, continuous with frame 1.)
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
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
_POSITION_CHANNELS = {"Xposition": 0, "Yposition": 1, "Zposition": 2}
_ROTATION_CHANNELS = {"Xrotation": "X", "Yrotation": "Y", "Zrotation": "Z"}
# A frame-0 rest pose has every non-root rotation at zero (to this many
# degrees) while real motion in the next frame moves at least one joint.
_REST_POSE_MAX_DEG = 1e-3
_MOTION_MIN_DEG = 1.0


@dataclass(frozen=True)
class BvhJoint:
    """One joint (or End Site) of a BVH hierarchy.

    Attributes:
      name: the name in the file; End Sites are `<parent>_end`.
      parent: index of the parent joint in hierarchy order, -1 for the root.
      offset: [3] offset from the parent, file units and axes.
      channels: channel names in file order; empty for an End Site.
      first_column: column of the first channel in a frame line.
    """

    name: str
    parent: int
    offset: np.ndarray
    channels: tuple[str, ...]
    first_column: int


@dataclass(frozen=True)
class BvhFile:
    """The contents of a BVH file, before any interpretation of units or axes.

    Attributes:
      joints: hierarchy in file order (parents before children).
      frames: [T, C] channel values, one row per frame line.
      frame_time: seconds per frame.
    """

    joints: tuple[BvhJoint, ...]
    frames: np.ndarray
    frame_time: float


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
            if channel in _POSITION_CHANNELS:
                translation[:, _POSITION_CHANNELS[channel]] = frames[:, column]
            else:
                axes += _ROTATION_CHANNELS[channel]
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
        if channel in _ROTATION_CHANNELS
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


# ---------------------------------------------------------------- parsing


def _error(path: Path, line: int, problem: str) -> UserError:
    return UserError(f"{path}, line {line}: {problem}")


class _Tokens:
    """The hierarchy's words with their line numbers, read front to back."""

    def __init__(self, path: Path, words: list[tuple[str, int]], end_line: int):
        self.path, self.words, self.end_line, self.at = path, words, end_line, 0

    def peek(self) -> str | None:
        return self.words[self.at][0] if self.at < len(self.words) else None

    def take(self) -> tuple[str, int]:
        if self.at >= len(self.words):
            raise _error(self.path, self.end_line, "the HIERARCHY section ends inside a joint (missing '}'?)")
        self.at += 1
        return self.words[self.at - 1]

    def expect(self, word: str) -> int:
        found, line = self.take()
        if found != word:
            raise _error(self.path, line, f"expected {word!r}, found {found!r}")
        return line

    def numbers(self, count: int, what: str) -> np.ndarray:
        values = []
        for _ in range(count):
            word, line = self.take()
            try:
                values.append(float(word))
            except ValueError:
                raise _error(self.path, line, f"{what} needs {count} numbers, found {word!r}") from None
        return np.array(values)


def parse_bvh(path: Path) -> BvhFile:
    """Read a BVH file's hierarchy and frames, checking each line; errors name the line."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read the BVH file ({error})") from None
    motion_line = next((i for i, line in enumerate(lines) if line.split()[:1] == ["MOTION"]), None)
    if motion_line is None:
        raise _error(path, len(lines), "no MOTION section (a line 'MOTION' after the hierarchy)")
    words = [(word, number) for number, line in enumerate(lines[:motion_line], 1) for word in line.split()]
    joints = _parse_hierarchy(_Tokens(path, words, motion_line + 1))
    frames, frame_time = _parse_motion(path, lines, motion_line, joints)
    return BvhFile(joints=tuple(joints), frames=frames, frame_time=frame_time)


def _parse_hierarchy(tokens: _Tokens) -> list[BvhJoint]:
    if tokens.peek() != "HIERARCHY":
        word, line = tokens.words[0] if tokens.words else ("nothing", tokens.end_line)
        raise _error(tokens.path, line, f"a BVH file starts with 'HIERARCHY', found {word!r}")
    tokens.take()
    tokens.expect("ROOT")
    joints: list[BvhJoint] = []
    _parse_joint(tokens, tokens.take()[0], -1, joints, 0)
    if tokens.peek() is not None:
        word, line = tokens.take()
        raise _error(tokens.path, line, f"expected 'MOTION' after the root joint, found {word!r}")
    return joints


def _parse_joint(tokens: _Tokens, name: str, parent: int, joints: list[BvhJoint], column: int) -> int:
    """Append the joint `name` and its subtree to `joints`; return the next free channel column."""
    tokens.expect("{")
    tokens.expect("OFFSET")
    offset = tokens.numbers(3, "OFFSET")
    channels: tuple[str, ...] = ()
    if tokens.peek() == "CHANNELS":
        channels = _parse_channels(tokens)
    index = len(joints)
    joints.append(BvhJoint(name, parent, offset, channels, column))
    column += len(channels)
    while True:
        word, line = tokens.take()
        if word == "JOINT":
            column = _parse_joint(tokens, tokens.take()[0], index, joints, column)
        elif word == "End":
            tokens.expect("Site")
            tokens.expect("{")
            tokens.expect("OFFSET")
            end_offset = tokens.numbers(3, "OFFSET")
            tokens.expect("}")
            joints.append(BvhJoint(_end_site_name(name, joints), index, end_offset, (), column))
        elif word == "}":
            return column
        else:
            raise _error(tokens.path, line, f"expected JOINT, End Site or '}}' in joint {name!r}, found {word!r}")


def _parse_channels(tokens: _Tokens) -> tuple[str, ...]:
    line = tokens.expect("CHANNELS")
    word, _ = tokens.take()
    if not word.isdigit():
        raise _error(tokens.path, line, f"CHANNELS needs a count, found {word!r}")
    channels = []
    for _ in range(int(word)):
        channel, channel_line = tokens.take()
        if channel not in _POSITION_CHANNELS and channel not in _ROTATION_CHANNELS:
            raise _error(
                tokens.path, channel_line,
                f"unknown channel {channel!r} (CHANNELS {word} on line {line} lists fewer names?)",
            )
        channels.append(channel)
    return tuple(channels)


def _end_site_name(parent: str, joints: list[BvhJoint]) -> str:
    taken = {joint.name for joint in joints}
    name, suffix = f"{parent}_end", 1
    while name in taken:
        suffix += 1
        name = f"{parent}_end{suffix}"
    return name


def _parse_motion(
    path: Path, lines: list[str], motion_line: int, joints: list[BvhJoint]
) -> tuple[np.ndarray, float]:
    """[T, C] frame values and the frame time from the lines after 'MOTION' (index motion_line)."""
    rows = [(number, line.split()) for number, line in enumerate(lines[motion_line:], motion_line + 1)]
    rows = [(number, words) for number, words in rows if words]
    if rows[0][1] != ["MOTION"]:
        raise _error(path, rows[0][0], f"expected 'MOTION' alone on its line, found {' '.join(rows[0][1])!r}")
    if len(rows) < 3:
        raise _error(path, len(lines), "MOTION needs 'Frames: N' and 'Frame Time: SECONDS' lines")
    (count_line, count_words), (time_line, time_words) = rows[1], rows[2]
    if len(count_words) != 2 or count_words[0] != "Frames:" or not count_words[1].isdigit():
        raise _error(path, count_line, f"expected 'Frames: N', found {' '.join(count_words)!r}")
    if len(time_words) != 3 or time_words[:2] != ["Frame", "Time:"] or not _is_positive(time_words[2]):
        raise _error(path, time_line, f"expected 'Frame Time: SECONDS', found {' '.join(time_words)!r}")
    frame_count, frame_time = int(count_words[1]), float(time_words[2])
    if frame_count == 0:
        raise _error(path, count_line, "the clip has no frames")
    width = sum(len(joint.channels) for joint in joints)

    frame_rows = rows[3:]
    for index, (number, words) in enumerate(frame_rows):
        if index == frame_count:
            raise _error(path, number, f"more frame lines than 'Frames: {frame_count}' on line {count_line}")
        if len(words) != width:
            raise _error(
                path, number,
                f"frame {index} has {len(words)} values, but the hierarchy declares {width} channels",
            )
    if len(frame_rows) < frame_count:
        last = frame_rows[-1][0] if frame_rows else time_line
        raise _error(
            path, last + 1,
            f"the MOTION section ends after {len(frame_rows)} frames, but line {count_line} says "
            f"'Frames: {frame_count}' (truncated file?)",
        )
    try:
        frames = np.array([words for _, words in frame_rows], dtype=np.float64).reshape(frame_count, width)
    except ValueError:
        number, word = _first_non_number(frame_rows)
        raise _error(path, number, f"non-numeric value {word!r} in a frame line") from None
    bad = np.argwhere(~np.isfinite(frames))
    if len(bad):
        raise _error(path, frame_rows[bad[0][0]][0], f"non-finite value {frames[tuple(bad[0])]} in a frame line")
    return frames, frame_time


def _is_positive(word: str) -> bool:
    try:
        value = float(word)
    except ValueError:
        return False
    return math.isfinite(value) and value > 0


def _first_non_number(rows: list[tuple[int, list[str]]]) -> tuple[int, str]:
    for number, words in rows:
        for word in words:
            try:
                float(word)
            except ValueError:
                return number, word
    raise AssertionError("numpy refused a frame that float() accepts")
