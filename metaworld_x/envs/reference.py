"""Reference motions as JAX arrays, sampled at any time by interpolation.

Several clips are padded to one length so a multi-clip task can pick one per
world under vmap. A looping clip (a walk cycle) repeats with its root moved
on by one cycle's displacement each time, so it can be followed for longer
than it lasts; a one-shot clip (sit down) holds its last frame.
"""

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from metaworld_x.envs import rotations
from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip

# Clip arrays a reference carries; positions get the cycle displacement.
_VECTORS = ("root_pos", "joint_pos", "joint_vel", "root_lin_vel", "root_ang_vel", "keypoint_pos")


@struct.dataclass
class ReferenceFrame:
    """The reference at one instant, one world."""

    root_pos: jax.Array  # [3]
    root_quat: jax.Array  # [4]
    joint_pos: jax.Array  # [19]
    joint_vel: jax.Array  # [19]
    root_lin_vel: jax.Array  # [3] world frame
    root_ang_vel: jax.Array  # [3] pelvis frame
    keypoint_pos: jax.Array  # [K, 3] world


@struct.dataclass
class ReferenceMotion:
    """C clips, padded to T frames by repeating each one's last frame."""

    root_pos: jax.Array  # [C, T, 3]
    root_quat: jax.Array  # [C, T, 4]
    joint_pos: jax.Array  # [C, T, 19]
    joint_vel: jax.Array  # [C, T, 19]
    root_lin_vel: jax.Array  # [C, T, 3]
    root_ang_vel: jax.Array  # [C, T, 3]
    keypoint_pos: jax.Array  # [C, T, K, 3]
    num_frames: jax.Array  # [C] int
    loop: jax.Array  # [C] bool
    cycle_shift: jax.Array  # [C, 3] horizontal root displacement per cycle
    fps: float = struct.field(pytree_node=False)
    keypoint_names: tuple[str, ...] = struct.field(pytree_node=False)

    @property
    def num_clips(self) -> int:
        return int(self.num_frames.shape[0])

    def duration(self, clip):
        """Seconds from first to last frame of clip index `clip`."""
        return (self.num_frames[clip] - 1).astype(jnp.float32) / self.fps


def facing_forward(clip: Clip) -> Clip:
    """`clip` turned about the vertical and moved so it starts at x = y = 0 and travels along +x.

    Task scenes put their props ahead of the robot along +x (the tunnel, the
    box); a human clip travels wherever its actor walked. Turning the whole
    clip rigidly keeps every relative pose and velocity: world vectors turn,
    the pelvis-frame angular velocity and the joints do not change. A clip that
    barely travels (< 10 cm) is turned so its first heading faces +x instead.
    """
    travel = clip.root_pos[-1, :2] - clip.root_pos[0, :2]
    if np.linalg.norm(travel) >= 0.1:
        angle = -np.arctan2(travel[1], travel[0])
    else:
        w, x, y, z = clip.root_quat[0]
        angle = -np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    c, s = np.cos(angle), np.sin(angle)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    origin = clip.root_pos[0] * np.array([1.0, 1.0, 0.0])

    def place(points):  # [..., 3] world points
        return (points - origin) @ turn.T

    yaw_quat = np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)])
    def turn_quat(quats):  # [T, 4] world orientations
        turned = np.asarray(rotations.multiply(yaw_quat, quats), np.float64)
        return turned / np.linalg.norm(turned, axis=-1, keepdims=True)

    object_pose = clip.object_pose
    if object_pose is not None:  # (w, x, y, z) then position
        object_pose = np.concatenate([turn_quat(object_pose[:, :4]), place(object_pose[:, 4:])], axis=-1)
    return dataclasses.replace(
        clip,
        root_pos=place(clip.root_pos),
        root_quat=turn_quat(clip.root_quat),
        root_lin_vel=clip.root_lin_vel @ turn.T,
        keypoint_pos=place(clip.keypoint_pos),
        target_pos=place(clip.target_pos),
        human_pos=place(clip.human_pos),
        object_pose=object_pose,
    )


def from_clips(clips: Sequence[Clip], loop: Sequence[bool]) -> ReferenceMotion:
    """Stack clips (same fps and keypoints) into one ReferenceMotion."""
    if not clips:
        raise UserError("a tracking task needs at least one reference clip")
    fps = {c.fps for c in clips}
    names = {c.keypoint_names for c in clips}
    if len(fps) > 1 or len(names) > 1:
        raise UserError(f"clips of one task must share fps and keypoints; got fps {sorted(fps)}")
    longest = max(c.num_frames for c in clips)

    def pad(x):
        extra = longest - x.shape[0]
        return np.concatenate([x, np.repeat(x[-1:], extra, axis=0)]) if extra else x

    arrays = {name: jnp.asarray(np.stack([pad(getattr(c, name)) for c in clips]), jnp.float32) for name in _VECTORS}
    shift = np.stack([c.root_pos[-1] - c.root_pos[0] for c in clips]) * np.array([1.0, 1.0, 0.0])
    return ReferenceMotion(
        root_quat=jnp.asarray(np.stack([pad(c.root_quat) for c in clips]), jnp.float32),
        num_frames=jnp.asarray([c.num_frames for c in clips], jnp.int32),
        loop=jnp.asarray(list(loop), bool),
        cycle_shift=jnp.asarray(shift, jnp.float32),
        fps=float(next(iter(fps))),
        keypoint_names=next(iter(names)),
        **arrays,
    )


def frame_at(ref: ReferenceMotion, clip, time) -> ReferenceFrame:
    """The reference of clip index `clip` at `time` seconds (scalars), interpolated."""
    last = (ref.num_frames[clip] - 1).astype(jnp.float32)
    position = jnp.maximum(time, 0.0) * ref.fps
    cycles = jnp.where(ref.loop[clip] & (last > 0), jnp.floor(position / jnp.maximum(last, 1.0)), 0.0)
    position = jnp.minimum(position - cycles * last, last)
    lower = jnp.floor(position).astype(jnp.int32)
    upper = jnp.minimum(lower + 1, ref.num_frames[clip] - 1)
    weight = position - lower

    def lerp(name):
        series = getattr(ref, name)[clip]
        return (1 - weight) * series[lower] + weight * series[upper]

    offset = cycles * ref.cycle_shift[clip]
    quats = ref.root_quat[clip]
    return ReferenceFrame(
        root_pos=lerp("root_pos") + offset,
        root_quat=rotations.nlerp(quats[lower], quats[upper], weight),
        joint_pos=lerp("joint_pos"),
        joint_vel=lerp("joint_vel"),
        root_lin_vel=lerp("root_lin_vel"),
        root_ang_vel=lerp("root_ang_vel"),
        keypoint_pos=lerp("keypoint_pos") + offset,
    )
