"""Reference motions as JAX arrays, sampled at any time by interpolation.

Several clips are padded to one length so a multi-clip task can pick one per
world under vmap. A looping clip (a walk cycle) repeats with its root moved
on by one cycle's displacement each time, so it can be followed for longer
than it lasts; a one-shot clip (sit down) holds its last frame.

A clip with an object (OMOMO's box) also gives the pose and velocity the
scene's box should have at any time (`object_at`): see `held_object` for how
the clip's object becomes the scene's box. A clip with props (a keyframed clip
that pushes the scene's box or opens its door) gives those scene joints'
qpos and qvel at any time (`props_at`), already in the scene's terms.
"""

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from metaworld_x.envs import rotations
from metaworld_x.envs.observations import twist_yaw
from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip

# Clip arrays a reference carries; positions get the cycle displacement.
_VECTORS = ("root_pos", "joint_pos", "joint_vel", "root_lin_vel", "root_ang_vel", "keypoint_pos")
_OBJECT_VECTORS = ("object_pos", "object_lin_vel", "object_ang_vel")

# The keypoints whose grip places the scene's box on the clip's object (see `held_object`).
HANDS = ("left_hand", "right_hand")
# Both hands this close (m) to the object's origin in a frame count as holding it there.
GRASP_REACH = 0.4


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
class ObjectFrame:
    """The clip's object, as the scene's box, at one instant, one world: its free joint's qpos and qvel."""

    pos: jax.Array  # [3] world
    quat: jax.Array  # [4] (w, x, y, z)
    lin_vel: jax.Array  # [3] world frame
    ang_vel: jax.Array  # [3] box frame, as MuJoCo's free joint has it


@struct.dataclass
class PropFrame:
    """The clip's props at one instant, one world: the qpos and qvel of `ReferenceMotion.prop_joints`, joint after joint."""

    qpos: jax.Array  # [P]
    qvel: jax.Array  # [V]


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
    object_pos: jax.Array  # [C, T, 3] the box (`held_object`); zeros for a clip without an object
    object_quat: jax.Array  # [C, T, 4]
    object_lin_vel: jax.Array  # [C, T, 3] world frame
    object_ang_vel: jax.Array  # [C, T, 3] box frame
    has_object: jax.Array  # [C] bool: the clip has an object pose
    prop_qpos: jax.Array  # [C, T, P] the scene joints `prop_joints` names, MuJoCo layout; [C, T, 0] without props
    prop_qvel: jax.Array  # [C, T, V] their velocities (a free joint's angular one in its body frame)
    num_frames: jax.Array  # [C] int
    loop: jax.Array  # [C] bool
    cycle_shift: jax.Array  # [C, 3] horizontal root displacement per cycle
    fps: float = struct.field(pytree_node=False)
    keypoint_names: tuple[str, ...] = struct.field(pytree_node=False)
    prop_joints: tuple[tuple[str, int], ...] = struct.field(pytree_node=False, default=())
    """(scene joint, qpos size) of each prop the clips record, as in `Clip.prop_joints`."""

    @property
    def num_clips(self) -> int:
        return int(self.num_frames.shape[0])

    def duration(self, clip):
        """Seconds from first to last frame of clip index `clip`."""
        return (self.num_frames[clip] - 1).astype(jnp.float32) / self.fps


def ground_pose(root_pos, root_quat):
    """[3] (x, y, yaw) of a root on the floor plane: where it stands and which way it faces.

    The heading is the root's twist about the vertical (`twist_yaw`), not its
    x axis's heading: a crawling pelvis points its x axis at the floor, and the
    x axis's heading jumps by up to pi between frames a few degrees apart
    (crawl_get_down at 1.7 s, and all through the crawl), and the re-anchored
    reference jumped with it, about the robot.
    """
    return jnp.stack([root_pos[..., 0], root_pos[..., 1], twist_yaw(root_quat)], axis=-1)


def moved_on_ground(frame: ReferenceFrame, source, destination) -> ReferenceFrame:
    """`frame` moved by the floor-plane rigid motion that takes ground pose `source` [3] onto `destination` [3].

    Only x, y and yaw move: heights, joint angles and the pelvis-frame angular
    velocity stay as the clip has them; world positions, the root orientation
    and the world-frame root velocity turn with the move.
    """
    turn = destination[2] - source[2]
    c, s = jnp.cos(turn), jnp.sin(turn)
    spin = jnp.stack([jnp.cos(turn / 2), 0.0 * turn, 0.0 * turn, jnp.sin(turn / 2)])

    def rotated(v):  # [..., 3] world vectors turned about the vertical
        return jnp.stack([c * v[..., 0] - s * v[..., 1], s * v[..., 0] + c * v[..., 1], v[..., 2]], axis=-1)

    shift_from = jnp.stack([source[0], source[1], 0.0 * source[0]])
    shift_to = jnp.stack([destination[0], destination[1], 0.0 * destination[0]])
    return frame.replace(
        root_pos=rotated(frame.root_pos - shift_from) + shift_to,
        root_quat=rotations.multiply(spin, frame.root_quat),
        root_lin_vel=rotated(frame.root_lin_vel),
        keypoint_pos=rotated(frame.keypoint_pos - shift_from) + shift_to,
    )


def reanchor(target: ReferenceFrame, now: ReferenceFrame, root_pos, root_quat) -> ReferenceFrame:
    """`target` moved by the floor-plane rigid motion that takes the clip's frame `now` onto a robot's root.

    root_pos [3], root_quat [4] are the robot's. Only x, y and yaw move: the
    clip's heights stay. How a router shows an expert its clip wherever the
    robot stands, and how a home-start tracking episode does.
    """
    return moved_on_ground(target, ground_pose(now.root_pos, now.root_quat), ground_pose(root_pos, root_quat))


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
    prop_qpos = None if clip.prop_qpos is None else clip.prop_qpos.copy()
    for start, size in _prop_slices(clip.prop_joints):
        if size == 7:  # a free prop turns with the clip; a hinge's angle is its own
            pose = prop_qpos[:, start : start + 7]
            prop_qpos[:, start : start + 7] = np.concatenate([place(pose[:, :3]), turn_quat(pose[:, 3:])], axis=-1)
    return dataclasses.replace(
        clip,
        root_pos=place(clip.root_pos),
        root_quat=turn_quat(clip.root_quat),
        root_lin_vel=clip.root_lin_vel @ turn.T,
        keypoint_pos=place(clip.keypoint_pos),
        target_pos=place(clip.target_pos),
        human_pos=place(clip.human_pos),
        object_pose=object_pose,
        prop_qpos=prop_qpos,
    )


def held_object(clip: Clip) -> dict[str, np.ndarray]:
    """The scene's box following the clip's object: {"object_pos": [T, 3], "object_quat": [T, 4],
    "object_lin_vel": [T, 3] (world), "object_ang_vel": [T, 3] (box frame)}.

    A clip's object pose is the source object's own frame (OMOMO's mesh),
    whose origin and axes need not be a box's centre and faces. The scene's box
    is put where the clip's hands hold it instead: centred between them, its y
    axis from the right hand to the left, its z axis the object's mean up. That
    grip is one fixed offset in the object's frame (the median over the frames
    where both hands are within GRASP_REACH of the object), so the box moves
    rigidly with the object all through the clip. A clip whose hands never hold
    the object keeps its pose, and so does a clip whose object is the box already
    (`motion.edits.grip.with_grip`, marked by `info["grip"]`). Velocities are central differences.
    """
    from scipy.spatial.transform import Rotation

    rot = Rotation.from_quat(clip.object_pose[:, :4].astype(np.float64), scalar_first=True)
    pos = clip.object_pose[:, 4:].astype(np.float64)
    names = clip.keypoint_names
    holding = np.zeros(clip.num_frames, bool)
    if all(h in names for h in HANDS) and "grip" not in clip.info:
        left, right = (rot.inv().apply(clip.keypoint_pos[:, names.index(h)] - pos) for h in HANDS)
        holding = (np.linalg.norm(left, axis=-1) < GRASP_REACH) & (np.linalg.norm(right, axis=-1) < GRASP_REACH)
    if holding.any():
        left, right = np.median(left[holding], axis=0), np.median(right[holding], axis=0)
        up = np.mean(rot[holding].inv().apply([0.0, 0.0, 1.0]), axis=0)
        y = (left - right) / np.linalg.norm(left - right)
        z = up - y * (up @ y)
        z /= np.linalg.norm(z)
        pos = pos + rot.apply((left + right) / 2)
        rot = rot * Rotation.from_matrix(np.stack([np.cross(y, z), y, z], axis=1))
    return {
        "object_pos": pos,
        "object_quat": rot.as_quat(scalar_first=True),
        "object_lin_vel": np.gradient(pos, 1.0 / clip.fps, axis=0),
        "object_ang_vel": _body_rates(rot, clip.fps),
    }


def _body_rates(rot, fps: float) -> np.ndarray:
    """[T, 3] body-frame angular velocity of a scipy Rotation series: central differences, one-sided at the ends."""
    step = (rot[:-1].inv() * rot[1:]).as_rotvec() * fps  # [T-1] rates between frames
    return np.concatenate([step[:1], (step[:-1] + step[1:]) / 2, step[-1:]])


def _prop_slices(joints: Sequence[tuple[str, int]]) -> list[tuple[int, int]]:
    """(qpos start, size) of each prop joint in a clip's prop_qpos."""
    sizes = [size for _, size in joints]
    return list(zip(np.cumsum([0] + sizes[:-1]).tolist(), sizes))


def prop_velocities(clip: Clip) -> np.ndarray:
    """[T, V] MuJoCo qvel of the clip's props: rates of change of prop_qpos (central differences).

    A hinge or slide's speed; a free joint's linear velocity (world frame)
    then angular velocity (its body frame), as MuJoCo's qvel has them.
    """
    from scipy.spatial.transform import Rotation

    parts = []
    for start, size in _prop_slices(clip.prop_joints):
        qpos = clip.prop_qpos[:, start : start + size].astype(np.float64)
        if size == 7:
            rot = Rotation.from_quat(qpos[:, 3:], scalar_first=True)
            parts += [np.gradient(qpos[:, :3], 1.0 / clip.fps, axis=0), _body_rates(rot, clip.fps)]
        else:
            parts.append(np.gradient(qpos, 1.0 / clip.fps, axis=0))
    return np.concatenate(parts, axis=-1) if parts else np.zeros((clip.num_frames, 0))


def _no_object(clip: Clip) -> dict[str, np.ndarray]:
    """The object arrays of a clip without an object: at the origin, unturned, still."""
    zeros = np.zeros((clip.num_frames, 3))
    unturned = np.tile([1.0, 0.0, 0.0, 0.0], (clip.num_frames, 1))
    return {"object_pos": zeros, "object_quat": unturned, "object_lin_vel": zeros, "object_ang_vel": zeros}


def from_clips(clips: Sequence[Clip], loop: Sequence[bool]) -> ReferenceMotion:
    """Stack clips (same fps and keypoints) into one ReferenceMotion, with the box of those that hold one."""
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
    objects = [held_object(c) if c.object_pose is not None else _no_object(c) for c in clips]
    arrays.update({
        name: jnp.asarray(np.stack([pad(o[name]) for o in objects]), jnp.float32)
        for name in _OBJECT_VECTORS + ("object_quat",)
    })
    props = {c.prop_joints for c in clips}
    if len(props) > 1:
        raise UserError(
            f"clips of one task must record the same props; got {sorted(list(p) for p in props)}"
        )
    arrays["prop_qpos"] = jnp.asarray(np.stack([
        pad(c.prop_qpos if c.prop_qpos is not None else np.zeros((c.num_frames, 0))) for c in clips
    ]), jnp.float32)
    arrays["prop_qvel"] = jnp.asarray(np.stack([pad(prop_velocities(c)) for c in clips]), jnp.float32)
    shift = np.stack([c.root_pos[-1] - c.root_pos[0] for c in clips]) * np.array([1.0, 1.0, 0.0])
    return ReferenceMotion(
        root_quat=jnp.asarray(np.stack([pad(c.root_quat) for c in clips]), jnp.float32),
        has_object=jnp.asarray([c.object_pose is not None for c in clips], bool),
        num_frames=jnp.asarray([c.num_frames for c in clips], jnp.int32),
        loop=jnp.asarray(list(loop), bool),
        cycle_shift=jnp.asarray(shift, jnp.float32),
        fps=float(next(iter(fps))),
        keypoint_names=next(iter(names)),
        prop_joints=next(iter(props)),
        **arrays,
    )


def _sample(ref: ReferenceMotion, clip, time):
    """(the two frames around `time` [int], the weight of the later one, the cycles the root has moved on,
    1 while the clip plays and 0 once a one-shot clip has ended and holds its last pose)."""
    last = (ref.num_frames[clip] - 1).astype(jnp.float32)
    position = jnp.maximum(time, 0.0) * ref.fps
    cycles = jnp.where(ref.loop[clip] & (last > 0), jnp.floor(position / jnp.maximum(last, 1.0)), 0.0)
    position = position - cycles * last
    playing = (position <= last).astype(jnp.float32)
    position = jnp.minimum(position, last)
    lower = jnp.floor(position).astype(jnp.int32)
    upper = jnp.minimum(lower + 1, ref.num_frames[clip] - 1)
    return lower, upper, position - lower, cycles, playing


def _interpolator(ref: ReferenceMotion, clip, lower, upper, weight):
    """name -> that per-frame array of clip `clip`, blended between frames `lower` and `upper`."""

    def lerp(name):
        series = getattr(ref, name)[clip]
        return (1 - weight) * series[lower] + weight * series[upper]

    return lerp


def frame_at(ref: ReferenceMotion, clip, time) -> ReferenceFrame:
    """The reference of clip index `clip` at `time` seconds (scalars), interpolated."""
    lower, upper, weight, cycles, playing = _sample(ref, clip, time)
    lerp = _interpolator(ref, clip, lower, upper, weight)

    offset = cycles * ref.cycle_shift[clip]
    quats = ref.root_quat[clip]
    return ReferenceFrame(
        root_pos=lerp("root_pos") + offset,
        root_quat=rotations.nlerp(quats[lower], quats[upper], weight),
        joint_pos=lerp("joint_pos"),
        # a held last pose is still: its velocities are zero, not the last frame's
        joint_vel=playing * lerp("joint_vel"),
        root_lin_vel=playing * lerp("root_lin_vel"),
        root_ang_vel=playing * lerp("root_ang_vel"),
        keypoint_pos=lerp("keypoint_pos") + offset,
    )


def closest_frame_time(ref: ReferenceMotion, joint_pos, clip: int = 0) -> float:
    """The time (s) of clip `clip`'s frame whose joint angles are closest to `joint_pos` [19] (e.g. the home pose)."""
    # numpy throughout: this runs on concrete arrays, also while a jitted reset is being traced
    frames = np.asarray(ref.joint_pos)[clip, : int(np.asarray(ref.num_frames)[clip])]
    best = int(np.argmin(np.sum((frames - np.asarray(joint_pos)) ** 2, axis=-1)))
    return best / ref.fps


def object_at(ref: ReferenceMotion, clip, time) -> ObjectFrame:
    """The box of clip index `clip` at `time` seconds (scalars), interpolated like `frame_at`."""
    lower, upper, weight, cycles, playing = _sample(ref, clip, time)
    lerp = _interpolator(ref, clip, lower, upper, weight)

    quats = ref.object_quat[clip]
    return ObjectFrame(
        pos=lerp("object_pos") + cycles * ref.cycle_shift[clip],
        quat=rotations.nlerp(quats[lower], quats[upper], weight),
        lin_vel=playing * lerp("object_lin_vel"),
        ang_vel=playing * lerp("object_ang_vel"),
    )


def props_at(ref: ReferenceMotion, clip, time) -> PropFrame:
    """The props of clip index `clip` at `time` seconds (scalars), interpolated like `frame_at`.

    A free prop's position moves on with a looping clip's root, as `object_at`'s box does.
    """
    lower, upper, weight, cycles, playing = _sample(ref, clip, time)
    lerp = _interpolator(ref, clip, lower, upper, weight)

    qpos = lerp("prop_qpos")
    for start, size in _prop_slices(ref.prop_joints):
        if size == 7:  # nlerp: a blend of unit quaternions, normalised
            quat = qpos[start + 3 : start + 7]
            position = qpos[start : start + 3] + cycles * ref.cycle_shift[clip]
            qpos = qpos.at[start : start + 3].set(position).at[start + 3 : start + 7].set(quat / jnp.linalg.norm(quat))
    return PropFrame(qpos=qpos, qvel=playing * lerp("prop_qvel"))
