"""A human motion clip: named joint positions in metres, z-up, at one frame rate.

Every loader in this package returns a `HumanMotion`, so the retargeting
stage sees one convention whatever the file format was:

- positions are world coordinates in metres;
- the frame is right-handed and z-up (x forward where the format says which
  way the character faces);
- frames are evenly spaced at `fps`, frame i at time i / fps;
- quaternions are (w, x, y, z).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError

_AXES = {"x": 0, "y": 1, "z": 2}
# Above this dot product two unit quaternions are so close that the slerp
# formula divides by a tiny sine; nlerp is used there, within 1e-6 rad of it.
_SLERP_DOT_LIMIT = 0.9995
_QUAT_NORM_TOLERANCE = 1e-2
# Source frame times are often printed rounded (0.033332 s for 1/30 s); a last
# frame that falls this fraction of a frame short of the new clock still counts.
_END_SLACK_FRAMES = 1e-2
_TIME_SLACK_FRAMES = 1e-2


@dataclass(frozen=True, eq=False)
class HumanMotion:
    """Positions (and, where the format has them, orientations) of a human's joints.

    Attributes:
      joint_names: one name per joint, as the source file spells it.
      parents: index of each joint's parent, -1 for a root; position-only
        formats without a kinematic tree use -1 throughout.
      positions: [T, J, 3] world positions, metres, z-up, right-handed.
      fps: frames per second; frame i is at time i / fps.
      source: the file the clip was loaded from.
      object_pose: [T, 7] pose of a manipulated object, quaternion (w, x, y, z)
        then position (x, y, z), in the same frame and units; None if absent.
      rotations: [T, J, 4] global joint orientations (w, x, y, z), each taking
        the joint's own axes (as the source file defines them) to the z-up
        world; None if the format has none.
      metadata: how the file was interpreted (format, units, scale, up axis,
        whether these were detected or given, frames skipped, ...).
    """

    joint_names: tuple[str, ...]
    parents: tuple[int, ...]
    positions: np.ndarray
    fps: float
    source: str
    object_pose: np.ndarray | None = None
    rotations: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Frozen, so fields are set through object.__setattr__; arrays become float64 copies.
        normalise = partial(object.__setattr__, self)
        normalise("source", str(self.source))
        normalise("joint_names", tuple(str(name) for name in self.joint_names))
        normalise("parents", tuple(int(parent) for parent in self.parents))
        normalise("fps", float(self.fps))
        normalise("positions", np.array(self.positions, dtype=np.float64))
        self._check_skeleton()
        self._check_positions()
        if self.object_pose is not None:
            pose = np.array(self.object_pose, dtype=np.float64)
            self._check_shape("object_pose", pose, (self.num_frames, 7))
            self._check_finite("object_pose", pose)
            pose[:, :4] = self._unit_quaternions("object_pose[:, :4]", pose[:, :4])
            normalise("object_pose", pose)
        if self.rotations is not None:
            rotations = np.array(self.rotations, dtype=np.float64)
            self._check_shape("rotations", rotations, (self.num_frames, len(self.joint_names), 4))
            self._check_finite("rotations", rotations)
            normalise("rotations", self._unit_quaternions("rotations", rotations))

    def _fail(self, problem: str) -> UserError:
        return UserError(f"{self.source}: {problem}")

    def _check_skeleton(self) -> None:
        names, parents = self.joint_names, self.parents
        if not names:
            raise self._fail("the clip has no joints")
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise self._fail(f"joint names repeat: {duplicates}")
        if len(parents) != len(names):
            raise self._fail(f"{len(parents)} parents for {len(names)} joints")
        for index, parent in enumerate(parents):
            if not -1 <= parent < len(names) or parent == index:
                raise self._fail(f"joint {names[index]!r} has parent index {parent}")
        if not np.isfinite(self.fps) or self.fps <= 0:
            raise self._fail(f"fps must be a positive number, got {self.fps}")

    def _check_positions(self) -> None:
        positions = self.positions
        if positions.ndim != 3 or positions.shape[0] < 1 or positions.shape[2] != 3:
            raise self._fail(f"positions must be [T>=1, J, 3], got shape {positions.shape}")
        if positions.shape[1] != len(self.joint_names):
            raise self._fail(
                f"positions hold {positions.shape[1]} joints but {len(self.joint_names)} are named"
            )
        self._check_finite("positions", positions)

    def _check_shape(self, name: str, array: np.ndarray, shape: tuple[int, ...]) -> None:
        if array.shape != shape:
            raise self._fail(f"{name} must have shape {shape}, got {array.shape}")

    def _check_finite(self, name: str, array: np.ndarray) -> None:
        bad = np.argwhere(~np.isfinite(array))
        if len(bad):
            where = f"frame {bad[0][0]}"
            if array.ndim == 3:
                where += f", joint {self.joint_names[bad[0][1]]!r}"
            raise self._fail(f"{name} has {len(bad)} non-finite values (first at {where})")

    def _unit_quaternions(self, name: str, quats: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(quats, axis=-1, keepdims=True)
        off = np.abs(norms - 1.0) > _QUAT_NORM_TOLERANCE
        if off.any():
            frame = np.argwhere(off)[0][0]
            raise self._fail(
                f"{name} are not unit quaternions (w, x, y, z): norm {norms[off][0]:.4g} at frame {frame}"
            )
        return quats / norms

    @property
    def num_frames(self) -> int:
        return self.positions.shape[0]

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last."""
        return (self.num_frames - 1) / self.fps

    @property
    def times(self) -> np.ndarray:
        """[T] time of each frame in seconds, starting at 0."""
        return np.arange(self.num_frames) / self.fps

    def joint(self, name: str) -> np.ndarray:
        """[T, 3] world positions of the joint called `name`."""
        if name not in self.joint_names:
            raise UserError(
                f"{self.source}: no joint named {name!r}; the clip has: {', '.join(self.joint_names)}"
            )
        return self.positions[:, self.joint_names.index(name)]

    def trim(self, start_s: float = 0.0, end_s: float | None = None) -> HumanMotion:
        """The frames whose time lies in [start_s, end_s] (end_s None: to the end)."""
        end_s = self.duration if end_s is None else end_s
        if not 0.0 <= start_s < end_s:
            raise UserError(
                f"{self.source}: trim needs 0 <= start_s < end_s, got start_s={start_s}, end_s={end_s}"
            )
        # Frame times are i / fps in floating point; a bound that names a
        # frame's time exactly must keep that frame.
        slack = _TIME_SLACK_FRAMES / self.fps
        keep = (self.times >= start_s - slack) & (self.times <= end_s + slack)
        if not keep.any():
            raise UserError(
                f"{self.source}: trim [{start_s}, {end_s}] s holds no frames; the clip lasts {self.duration:.3f} s"
            )
        frames = np.flatnonzero(keep)
        return self._at_frames(frames[0], frames[-1] + 1)

    def _at_frames(self, first: int, stop: int) -> HumanMotion:
        return dataclasses.replace(
            self,
            positions=self.positions[first:stop],
            object_pose=None if self.object_pose is None else self.object_pose[first:stop],
            rotations=None if self.rotations is None else self.rotations[first:stop],
            metadata={**self.metadata, "trimmed_frames": (int(first), int(stop))},
        )

    def played_at(self, rate: float) -> HumanMotion:
        """The same poses played `rate` times as fast: cadence and speed scale by `rate`, strides do not."""
        if not np.isfinite(rate) or rate <= 0:
            raise UserError(f"{self.source}: a playback rate must be a positive number, got {rate}")
        total = float(rate) * float(self.metadata.get("playback_rate", 1.0))
        return dataclasses.replace(self, fps=self.fps * rate, metadata={**self.metadata, "playback_rate": total})

    def resample(self, fps: float) -> HumanMotion:
        """The clip at `fps`: positions interpolated linearly, quaternions by slerp."""
        if not np.isfinite(fps) or fps <= 0:
            raise UserError(f"{self.source}: resample needs a positive fps, got {fps}")
        new_times = uniform_times(self.duration, fps)
        first, weight = frame_weights(self.times, new_times)
        pose = self.object_pose
        if pose is not None:
            pose = np.concatenate(
                [slerp_frames(pose[:, :4], first, weight), lerp_frames(pose[:, 4:], first, weight)],
                axis=-1,
            )
        rotations = None if self.rotations is None else slerp_frames(self.rotations, first, weight)
        return dataclasses.replace(
            self,
            positions=lerp_frames(self.positions, first, weight),
            fps=fps,
            object_pose=pose,
            rotations=rotations,
            metadata={**self.metadata, "resampled_from_fps": self.fps},
        )


def uniform_times(duration: float, fps: float) -> np.ndarray:
    """[N] times 0, 1/fps, ... up to `duration`, inclusive."""
    count = int(np.floor(duration * fps + _END_SLACK_FRAMES)) + 1
    return np.arange(count) / fps


def frame_weights(times: np.ndarray, new_times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of `new_times` [N] falls between frames at increasing `times` [T].

    Returns (first [N] int, weight [N]): the value at new time n is
    (1 - weight) * value[first] + weight * value[first + 1]. Times outside
    [times[0], times[-1]] are clamped to the ends.
    """
    if len(times) == 1:
        return np.zeros(len(new_times), dtype=int), np.zeros(len(new_times))
    first = np.clip(np.searchsorted(times, new_times, side="right") - 1, 0, len(times) - 2)
    span = times[first + 1] - times[first]
    weight = np.clip((new_times - times[first]) / span, 0.0, 1.0)
    return first, weight


def lerp_frames(values: np.ndarray, first: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """[N, ...] linear interpolation of `values` [T, ...] at (first, weight)."""
    second = np.minimum(first + 1, len(values) - 1)
    w = weight.reshape((-1,) + (1,) * (values.ndim - 1))
    return (1.0 - w) * values[first] + w * values[second]


def slerp_frames(quats: np.ndarray, first: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """[N, ..., 4] slerp of unit quaternions `quats` [T, ..., 4] at (first, weight)."""
    second = np.minimum(first + 1, len(quats) - 1)
    w = weight.reshape((-1,) + (1,) * (quats.ndim - 1))
    return slerp(quats[first], quats[second], w)


def slerp(q0: np.ndarray, q1: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """[..., 4] shortest-path spherical interpolation between unit quaternions.

    Args:
      q0, q1: [..., 4] unit quaternions, any component order.
      weight: [..., 1] (or broadcastable) fraction of the way from q0 to q1.
    """
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    # q and -q are the same rotation; interpolate towards the nearer one.
    q1 = np.where(dot < 0.0, -q1, q1)
    dot = np.abs(dot)
    angle = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_angle = np.sin(angle)
    near = dot > _SLERP_DOT_LIMIT
    safe_sin = np.where(near, 1.0, sin_angle)
    w0 = np.where(near, 1.0 - weight, np.sin((1.0 - weight) * angle) / safe_sin)
    w1 = np.where(near, weight, np.sin(weight * angle) / safe_sin)
    out = w0 * q0 + w1 * q1
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def axis_vector(axis: str) -> np.ndarray:
    """[3] unit vector for an axis name such as 'y' or '-z'."""
    sign = -1.0 if axis.startswith("-") else 1.0
    vector = np.zeros(3)
    vector[_AXES[axis.lstrip("+-")]] = sign
    return vector


def z_up_rotation(up_axis: str, forward_axis: str) -> np.ndarray:
    """[3, 3] proper rotation taking a frame with the given up and forward axes to z-up, x-forward.

    With up 'y' and forward 'z' (BVH's convention) it is the cyclic
    permutation (x, y, z) -> (z, x, y); the character's left ends up on +y,
    as on a robot facing +x.
    """
    up, forward = axis_vector(up_axis), axis_vector(forward_axis)
    if abs(up @ forward) > 0.5:
        raise UserError(f"the up axis {up_axis!r} and the forward axis {forward_axis!r} must differ")
    return np.stack([forward, np.cross(up, forward), up])


def rotate_frame(
    matrix: np.ndarray, positions: np.ndarray, rotations: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Express positions [..., 3] and orientations [..., 4] (w, x, y, z) in a rotated world."""
    positions = positions @ matrix.T
    if rotations is None:
        return positions, None
    turned = Rotation.from_matrix(matrix) * Rotation.from_quat(
        rotations.reshape(-1, 4), scalar_first=True
    )
    return positions, turned.as_quat(scalar_first=True).reshape(rotations.shape)
