"""Reference motions as JAX arrays, sampled at any time by interpolation.

Several clips are padded to one length so a multi-clip task can pick one per
world under vmap. A looping clip (a walk cycle) repeats with its root moved
on by one cycle's displacement each time, so it can be followed for longer
than it lasts; a one-shot clip (sit down) holds its last frame.
"""

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
