"""A clip's hands closed on the scene's box, and the box put where they close, so that following the clip lifts it.

A mocap object is not the box between the H1's paddles, and the robot's hands
are not the person's. In OMOMO's large-box pickup (pickup_carry) the held box
(`reference.held_object`) is 0.36 m across, but:

- the hand sites hold it 0.46-0.60 m apart, 4-11 cm outside each face;
- at the lift the robot's hands close 22 cm beyond where the box rests: the
  retargeted object follows the robot's hands only once lifted;
- the squatting hands never come lower than 0.31 m, above the top of a 0.3 m
  box resting on the floor.

A policy that followed such a clip exactly would never touch the box. The
lead-in run got down to it in 10/10 home episodes and lifted it in none.

`with_grip` fits the hands and the box to each other from the lift on. The lift
is the first frame where the held box rises `lift_threshold` above its rest.

- Across the box: each hand moves along the level line from the right hand to
  the left (the box's y axis) to `squeeze` inside the face it touches. Both
  hands move by the same amount, so their midpoint stays.
- Down: both hands move down by one fixed amount, so that at the lift they hold
  the resting box `grip_height` above its centre.
- The change ramps in over `ramp_s` before the lift (minimum jerk). Over
  `raise_s` after it the hands rise back, and `grip_height` more, so the carried
  box is where the person's hands hold theirs, clear of the robot's thighs.
- The IK keeps the robot's centre of mass over its feet while both stand
  (`IkConfig.balance_cost`): reaching for the box with shorter arms than the
  person's, it had leant the robot 0.3 m past its toes. Balanced, its hands
  reach down to a box resting 11 cm up, so the box rests there, on a stand.
- The poses go through the same IK, foot-pinning and contact stages as
  retargeted mocap (`retarget.solve_clip`).
- The box path is rebuilt from the solved hands. From the lift on, the box sits
  `grip_height` below their midpoint (less where they come lower than that
  above a box on the floor), upright, its y axis level from the right hand to
  the left. Before the lift it rests where the hands pick it up: on the floor,
  or on a stand as high as it then is (`Carry.scene_along`).
- The clip stores the box's own pose, marked by `info["grip"]`, which
  `held_object` takes as is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip
from metaworld_x.motion.edits.gait_transition import poses_from_rest_config, targets_from_poses
from metaworld_x.motion.keyframes import minimum_jerk
from metaworld_x.motion.retarget import SourceInfo, solve_clip
from metaworld_x.motion.scaling import KEYPOINT_NAMES, SIDES
from metaworld_x.robot.model import PADDLE_HALF_SIZE
from metaworld_x.scene.props import BOX_HALF_SIZE


@dataclass(frozen=True)
class GripConfig:
    """The box held, and where, how hard and from when the hands hold it."""

    box_half_size: tuple[float, float, float] = BOX_HALF_SIZE
    """Half extents (m) of the box held; y lies across the hands."""
    paddle_half_size: tuple[float, float, float] = PADDLE_HALF_SIZE
    """Half extents (m) of a paddle hand, centred 2 cm beyond the hand site; its thickness (y) faces the box."""
    hand_radius: float = 0.035
    """Radius (m) of the H1's hand sphere at the hand site: thicker than the paddle, it touches a face first."""
    squeeze: float = 0.04
    """How far (m) inside the face each hand is asked to be, so that the servos press the hands on. The
    shoulders' 100 N m/rad at 0.55 m press about 5 N per cm; holding the 1.5 kg box at friction 1 takes 7.4 N
    a side before it accelerates."""
    grip_height: float = 0.07
    """How far (m) above the box's centre the hands hold it: the paddles (0.12 m high) stay on the faces
    (0.3 m high), and the squatting hands need come down less far to a box on the floor."""
    ramp_s: float = 0.3
    """The grip closes over this long before the lift."""
    raise_s: float = 0.8
    """Over this long after the lift the hands rise back by `hands_lowered` and `grip_height` more, so that the
    carried box is where the person's hands hold theirs, clear of the thighs (hung `grip_height` lower, it
    went 14 cm into the pelvis mid-walk)."""
    balance_cost: float = 10.0
    """The IK's pull of the centre of mass over the soles (`IkConfig.balance_cost`). The person squats to the box
    with the hips back; the robot's shorter arms, reaching for the same box, had the IK lean it 0.3 m past its
    toes, a pose no policy can hold."""
    lift_threshold: float = 0.005
    """How far (m) the held box must rise above its rest for the lift to begin."""
    facing_cost: float = 0.0
    """The IK's pull of each paddle's face onto the box's (`IkConfig.hand_facing_cost`), ramped in with the grip.
    The arm's four joints set the hand's place and leave the forearm's roll to the rest of the pose: the shipped
    clip's paddles meet the box's faces at 14-19° on average (up to 33°), and its box starts up to 7.4 cm inside
    them. At 0.1: 5-7° (up to 11°) and 3.9 cm, the hands 0.7 cm wider apart than asked; at 1.0 the paddles lie
    flat (1°) but the hands end 6 cm too far apart to squeeze the box. Off until a carry expert is trained on the
    clip it makes."""
    balance_smoothing_s: float = 0.0
    """`IkConfig.balance_smoothing_s` for the grip's IK. The shipped clip's balance pull comes and goes with each
    step's double support, and its pelvis jumps up to 15.6 cm in a frame as a foot lifts; at 0.25 s, 5.5 cm at
    most. Off until a carry expert is trained on the clip it makes."""

    def __post_init__(self) -> None:
        if min(self.box_half_size) <= 0 or min(self.paddle_half_size) <= 0 or self.hand_radius < 0:
            raise UserError("the box's and the paddle's half sizes must be positive and the hand's radius not negative")
        if not 0 <= self.squeeze < self.box_half_size[1]:
            raise UserError(f"squeeze must be in [0, {self.box_half_size[1]}) m, got {self.squeeze}")
        if not 0 <= self.grip_height <= self.box_half_size[2] - self.paddle_half_size[2]:
            raise UserError(f"grip_height must be in [0, {self.box_half_size[2] - self.paddle_half_size[2]:.3f}] m "
                            f"(the paddles on the box's faces), got {self.grip_height}")
        if self.ramp_s <= 0 or self.raise_s <= 0 or self.lift_threshold <= 0:
            raise UserError("ramp_s, raise_s and lift_threshold must be positive")

    @property
    def hand_offset(self) -> float:
        """How far (m) from the box's centre plane each hand site is put."""
        return self.box_half_size[1] + max(self.paddle_half_size[1], self.hand_radius) - self.squeeze


def lift_frame(object_z: np.ndarray, threshold: float) -> int:
    """The first frame where a box that starts at rest has risen `threshold` above its starting height."""
    risen = np.flatnonzero(object_z > object_z[0] + threshold)
    if risen.size == 0:
        raise UserError("the clip's object is never lifted; there is nothing to grip")
    return int(risen[0])


def _hands(clip: Clip) -> np.ndarray:
    """[T, 2, 3] hand sites, in SIDES order."""
    return np.stack([clip.keypoint(f"{side}_hand") for side in SIDES], axis=1)


def _across(hands: np.ndarray) -> np.ndarray:
    """[T, 3] level unit vectors from the right hand to the left: the held box's y axis."""
    across = (hands[:, 0] - hands[:, 1]) * [1.0, 1.0, 0.0]
    return across / np.linalg.norm(across, axis=-1, keepdims=True)


def _upright(across: np.ndarray) -> np.ndarray:
    """[T, 4] quaternions (w, x, y, z) of an upright box whose y axis is `across`."""
    up = np.broadcast_to([0.0, 0.0, 1.0], across.shape)
    return Rotation.from_matrix(np.stack([np.cross(across, up), across, up], axis=-1)).as_quat(scalar_first=True)


def with_grip(clip: Clip, *, model: mujoco.MjModel, config: GripConfig | None = None,
              progress: bool = False) -> Clip:
    """`clip` with its hands closed on the box from the lift on, and the box where they hold it (module docstring)."""
    from metaworld_x.envs.reference import held_object

    config = config or GripConfig()
    if clip.object_pose is None:
        raise UserError(f"clip {clip.skill!r} holds no object; a grip needs one")
    lift = lift_frame(held_object(clip)["object_pos"][:, 2], config.lift_threshold)
    hands = _hands(clip)
    middle = hands.mean(axis=1)
    across = _across(hands)
    lowest = middle[lift:, 2].min()  # the hands rise from the lift on: hold the box there without it in the floor
    drop = lowest - config.grip_height - config.box_half_size[2]
    if drop < 0:
        raise UserError(f"the clip's hands are {-drop:.3f} m too low at the lift to hold a box of this size there")
    t = np.arange(clip.num_frames, dtype=np.float64)
    ramp = config.ramp_s * clip.fps
    weight = minimum_jerk((t - (lift - ramp)) / ramp)[:, None]
    raised = minimum_jerk((t - lift) / (config.raise_s * clip.fps))[:, None]
    sign = np.array([1.0, -1.0])[None, :, None]  # the left hand on the box's +y face, the right on its -y face
    spread = np.einsum("tij,tj->ti", hands - middle[:, None], across)[..., None]
    height = -drop * weight + (drop + config.grip_height) * raised  # [T, 1] the hands' vertical shift
    shift = weight[:, None] * (sign * config.hand_offset - spread) * across[:, None]
    shift[..., 2] += height

    poses = np.concatenate([clip.root_pos, clip.root_quat, clip.joint_pos], axis=1)
    targets = targets_from_poses(model, poses)
    positions = dict(targets.positions)
    # The person's pelvis, not the leaning robot's: with the balance task it takes the hips back.
    positions["pelvis"] = clip.target_pos[:, KEYPOINT_NAMES.index("pelvis")].astype(np.float64)
    for i, side in enumerate(SIDES):
        for part in ("wrist", "elbow"):  # the elbow goes along, or its target holds the hand back
            positions[f"{side}_{part}"] = positions[f"{side}_{part}"] + shift[:, i]
    source = SourceInfo(kind=clip.source, file=clip.source_file, licence=clip.licence, attribution=clip.attribution)
    retarget = poses_from_rest_config(clip.fps)
    retarget = replace(retarget, ik=replace(retarget.ik, balance_cost=config.balance_cost,
                                            balance_smoothing_s=config.balance_smoothing_s,
                                            hand_facing_cost=config.facing_cost))
    facing = {side: weight * across for side in SIDES}  # the paddles' normals across the box, as the grip closes
    result = solve_clip(replace(targets, positions=positions, hand_facing=facing), clip.skill, model=model,
                        config=retarget, source=source, info=clip.info, progress=progress)

    # The hands hold the box `grip_height` above its centre. Where the IK, keeping the robot balanced, leaves them
    # higher than that above a box on the floor, the box rests higher: on a stand (`Carry.scene_along`). Where it
    # brings them lower, it rests on the floor and they hold it lower on its faces.
    solved = _hands(result)
    middle = solved.mean(axis=1)
    rest = max(middle[lift, 2] - config.grip_height, config.box_half_size[2])
    held_at = middle[lift, 2] - rest
    if held_at < 0:
        raise UserError(f"the solved hands are {-held_at:.3f} m below the box's centre at the lift, off its faces")
    centre = middle - [0.0, 0.0, held_at]
    quat = _upright(_across(solved))
    centre[:lift], quat[:lift] = centre[lift], quat[lift]
    info = {**result.info, "grip": {"lift_s": lift / clip.fps, "hand_offset": config.hand_offset,
                                    "hands_lowered": float(drop), "held_above_centre": float(held_at),
                                    "rest_height": float(rest - config.box_half_size[2])}}
    return replace(result, info=info,
                   object_pose=np.concatenate([quat, centre], axis=1).astype(clip.object_pose.dtype))
