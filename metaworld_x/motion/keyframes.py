"""Keyframed reference clips for skills with no human clip here (sit, rise, reach, push, door).

A clip is a few key poses, each the pelvis pose plus where the hands and the
soles should be, at given times. Between keys every target moves on a
minimum-jerk curve (zero velocity and acceleration at each key), or, for a
clip that walks (`KeyframeClip.smooth`), on a shape-preserving cubic through
the keys (PCHIP) so the body does not stop at each one. The
whole clip goes through the same IK, floor and contact stages as retargeted
mocap (`retarget.solve_clip`), so both kinds of clip look alike to the
environments. Clips made here are marked `source: keyframed`; they are the
first to replace with real mocap (see assets/motions/README.md).

A key may also give the state of scene joints the skill moves (`KeyPose.props`:
the pushed box, the door's hinge); they follow the same curves between keys
and are stored in the clip's `prop_qpos`, so an episode started late in the
clip starts with its props where the clip has moved them.

Coordinates: metres, z up, the robot starts at the origin facing +x (the
scenes put the chair's seat centre at x = -0.3, top at 0.46 m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip
from metaworld_x.motion.ik import IkConfig, home_qpos
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS
from metaworld_x.motion.retarget import RetargetConfig, SourceInfo, solve_clip
from metaworld_x.motion.scaling import KEYPOINT_NAMES, SIDES, RobotProportions, ScaledTargets
from metaworld_x.robot.constants import HOME_ROOT_HEIGHT
from metaworld_x.robot.parts import robot_geoms
from metaworld_x.scene.compose import DEFAULT_PLACES, PUSH_BOX, PUSH_MARKER
from metaworld_x.scene.props import BOX_HALF_SIZE, DOOR_WIDTH

Vec = tuple[float, float, float]


@dataclass(frozen=True)
class KeyPose:
    """One key pose: where the pelvis, hands and soles are at `time`.

    Hands and soles left as None keep their place in the previous key (the
    first key's defaults are the home pose's).
    """

    time: float
    """Seconds from the clip's start."""
    pelvis: Vec
    """Pelvis position (m)."""
    pelvis_rpy: Vec = (0.0, 0.0, 0.0)
    """Pelvis roll, pitch (positive leans forward), yaw (rad)."""
    torso_yaw: float = 0.0
    """Waist yaw relative to the pelvis (rad)."""
    left_hand: Vec | None = None
    right_hand: Vec | None = None
    left_foot: Vec | None = None
    """Left sole centre (m); its z is 0 when standing."""
    right_foot: Vec | None = None
    left_foot_yaw: float | None = None
    """Left sole's heading (rad); None: the pelvis's. A foot that steps round in a turn turns before the pelvis does."""
    right_foot_yaw: float | None = None
    home_hands: bool = False
    """Hands not given here go back to where the home pose has them (True), or keep the previous key's (False)."""
    props: tuple[tuple[str, tuple[float, ...]], ...] = ()
    """(scene joint, its qpos) of props the skill moves, e.g. (("door_hinge", (0.7,)),); a joint left
    out keeps its state from the previous key, so the first key gives every joint a later key gives."""


@dataclass(frozen=True)
class KeyframeClip:
    """A keyframed skill: its key poses and what it is for."""

    skill: str
    keys: tuple[KeyPose, ...]
    notes: str = ""
    hold: float = 0.5
    """Seconds the last pose is held."""
    scene: tuple[str, str] | None = None
    """(scene, robot variant) the keys are written in, e.g. ("door", "h1_hands"); `yielding` props are fitted in it."""
    yielding: tuple[str, ...] = ()
    """Hinge or slide prop joints the robot pushes (a door's): recorded at their keyed value or beyond it, as far
    as keeps the robot out of the prop, and never closing again (`yield_to_robot`); needs `scene`."""
    smooth: bool = False
    """Pass through the inner keys without stopping (PCHIP: continuous velocity, no overshoot, so a
    foot held still between two keys stays still and a lifted foot peaks at its key), as a walk needs;
    False: rest at every key (minimum jerk), as a sequence of separate moves does."""


def home_points(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    """Hand and sole positions {left_hand, right_hand, left_foot, right_foot} of the home pose at the origin."""
    data = mujoco.MjData(model)
    data.qpos[:] = home_qpos(model, HOME_ROOT_HEIGHT)
    mujoco.mj_kinematics(model, data)
    points = {f"{side}_hand": data.site(f"{side}_hand").xpos.copy() for side in SIDES}
    soles = {f"{side}_foot": data.site(f"{side}_foot").xpos.copy() for side in SIDES}
    height = min(p[2] for p in soles.values())
    points.update({key: value - [0.0, 0.0, height] for key, value in soles.items()})
    points["pelvis"] = data.body("pelvis").xpos.copy() - [0.0, 0.0, height]
    return points


def minimum_jerk(fraction: np.ndarray) -> np.ndarray:
    """s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5: 0 -> 1 with zero speed and acceleration at both ends."""
    tau = np.clip(fraction, 0.0, 1.0)
    return tau**3 * (10.0 - 15.0 * tau + 6.0 * tau**2)


def _rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    return Rotation.from_euler("ZYX", [yaw, pitch, roll]).as_matrix()


PROP_TRACK = "prop:"
"""Prefix of the `key_tracks` entries that are scene joints' qpos (`KeyPose.props`)."""


def key_tracks(clip: KeyframeClip, home: dict[str, np.ndarray], fps: float) -> dict[str, np.ndarray]:
    """{quantity: [T, n]} every key quantity at each frame, minimum-jerk between keys; a prop
    joint's qpos is the quantity PROP_TRACK + its name."""
    keys = sorted(clip.keys, key=lambda key: key.time)
    if not keys or keys[0].time != 0.0:
        raise UserError(f"keyframed clip {clip.skill!r}: the first key must be at time 0")
    points = [name for name in home if name != "pelvis"]  # hands and soles
    props = [PROP_TRACK + joint for joint, _ in keys[0].props]
    late = {joint for key in keys for joint, _ in key.props} - {joint for joint, _ in keys[0].props}
    if late:
        raise UserError(
            f"keyframed clip {clip.skill!r}: the first key must give the state of every prop joint; it lacks {sorted(late)}"
        )
    foot_yaws = [f"{side}_foot_yaw" for side in SIDES]
    values: dict[str, list[np.ndarray]] = {
        name: [] for name in ("pelvis", "rpy", "torso_yaw", *foot_yaws, *points, *props)
    }
    last = {name: home[name] for name in points}
    for key in keys:
        values["pelvis"].append(np.array(key.pelvis, dtype=float))
        values["rpy"].append(np.array(key.pelvis_rpy, dtype=float))
        values["torso_yaw"].append(np.array([key.torso_yaw]))
        for name in foot_yaws:
            given = getattr(key, name)
            values[name].append(np.array([key.pelvis_rpy[2] if given is None else given]))
        for name in points:
            given = getattr(key, name)
            kept = home[name] if key.home_hands and name.endswith("_hand") else last[name]
            last[name] = kept if given is None else np.array(given, dtype=float)
            values[name].append(last[name])
        last.update({PROP_TRACK + joint: np.array(qpos, dtype=float) for joint, qpos in key.props})
        for name in props:
            values[name].append(last[name])
    times = np.array([key.time for key in keys])
    if np.any(np.diff(times) <= 0.0):
        raise UserError(f"keyframed clip {clip.skill!r}: two keys share a time; key times must differ")
    frames = np.arange(int(round((times[-1] + clip.hold) * fps)) + 1) / fps
    if clip.smooth and len(times) > 1:
        from scipy.interpolate import PchipInterpolator

        held = np.minimum(frames, times[-1])
        return {name: PchipInterpolator(times, np.array(v), axis=0)(held) for name, v in values.items()}
    index = np.clip(np.searchsorted(times, frames, side="right") - 1, 0, len(times) - 1)
    following = np.minimum(index + 1, len(times) - 1)
    span = np.maximum(times[following] - times[index], 1e-9)
    blend = minimum_jerk((frames - times[index]) / span)[:, None]
    blend[following == index] = 0.0
    return {name: (1 - blend) * np.array(v)[index] + blend * np.array(v)[following] for name, v in values.items()}


def keyframe_targets(clip: KeyframeClip, model: mujoco.MjModel, fps: float) -> ScaledTargets:
    """Targets for `solve_clip` from the key poses; keypoints without a key follow the robot's trunk."""
    robot = RobotProportions.of(model)
    tracks = key_tracks(clip, home_points(model), fps)
    pelvis_rot = np.array([_rpy_matrix(*rpy) for rpy in tracks["rpy"]])
    torso_rot = np.array([rot @ _rpy_matrix(0.0, 0.0, yaw[0]) for rot, yaw in zip(pelvis_rot, tracks["torso_yaw"])])
    hip_centre = tracks["pelvis"] - np.einsum("tij,j->ti", pelvis_rot, robot.offsets["pelvis"])
    trunk = lambda key, rot: hip_centre + np.einsum("tij,j->ti", rot, robot.offsets[key])
    positions = {"pelvis": tracks["pelvis"], "chest": trunk("chest", torso_rot), "head": trunk("head", torso_rot)}
    foot_rot = {}
    for side in SIDES:
        sole = tracks[f"{side}_foot"]
        yaw = np.array([_rpy_matrix(0.0, 0.0, heading[0]) for heading in tracks[f"{side}_foot_yaw"]])
        foot_rot[side] = yaw
        ankle = sole - np.einsum("tij,j->ti", yaw, robot.sole)
        hip = trunk(f"{side}_hip", pelvis_rot)
        shoulder = trunk(f"{side}_shoulder", torso_rot)
        hand = tracks[f"{side}_hand"]
        positions.update({
            f"{side}_hip": hip, f"{side}_knee": 0.5 * (hip + ankle), f"{side}_ankle": ankle, f"{side}_toe": sole,
            f"{side}_shoulder": shoulder, f"{side}_elbow": 0.5 * (shoulder + hand), f"{side}_wrist": hand,
        })
    return ScaledTargets.of_robot(positions, pelvis_rot, torso_rot, foot_rot)


def compose(clip: KeyframeClip, *, model: mujoco.MjModel | None = None, config: RetargetConfig | None = None,
            progress: bool = False) -> Clip:
    """Solve a keyframed clip into a `Clip` marked `source: keyframed`."""
    if model is None:
        from metaworld_x.robot import robot_spec

        model = robot_spec("h1").compile()
    if config is None:
        # Knees and elbows have no keys: IK places them, the posture term keeps them natural.
        costs = {**IkConfig().position_costs, **{f"{s}_{p}": 0.0 for s in SIDES for p in ("knee", "elbow")}}
        config = RetargetConfig(ik=IkConfig(position_costs=costs), align_start=False)
    targets = keyframe_targets(clip, model, config.fps)
    result = solve_clip(
        targets, clip.skill, model=model, config=config,
        source=SourceInfo(kind="keyframed", file="", licence="project's own (Apache-2.0)",
                          attribution="keyframed by the MetaWorld-X authors"),
        info={"keys": len(clip.keys), "notes": clip.notes, "scale": 1.0, "loop": False}, progress=progress,
    )
    # No human to show: display the robot's own keypoints as the "human" skeleton.
    index = {name: i for i, name in enumerate(KEYPOINT_NAMES)}
    shoulders = 0.5 * (result.keypoint_pos[:, index["left_shoulder"]] + result.keypoint_pos[:, index["right_shoulder"]])
    human = np.stack([result.keypoint_pos[:, index[name]] if name in index else shoulders
                      for name in CANONICAL_KEYPOINTS], axis=1)
    result = replace(result, human_pos=human, **prop_states(clip, config.fps))
    if clip.yielding:
        if clip.scene is None:
            raise UserError(f"keyframed clip {clip.skill!r}: yielding props need the clip's scene")
        qpos = result.prop_qpos.copy()
        start = dict(zip((j for j, _ in result.prop_joints), np.cumsum([0] + [n for _, n in result.prop_joints])))
        for joint in clip.yielding:
            qpos[:, start[joint]] = yield_to_robot(result, joint, *clip.scene)
        result = replace(result, prop_qpos=qpos)
    return result


# Deepest overlap (m) of the robot with a yielding prop that `yield_to_robot` leaves, and its search step.
_YIELD_TOLERANCE = 0.001
_YIELD_STEP = 0.002


def yield_to_robot(clip: Clip, joint: str, scene: str, variant: str) -> np.ndarray:
    """[T] the recorded value of hinge or slide `joint`, raised frame by frame until the robot's geoms are clear
    of the body the joint moves, and never lowered again: a door the hands and body push open stays open.

    The keys place the hands on the panel by the keyed angle; the paddles
    and the arm passing the doorway reach a few cm further than it, so the
    door must be a little more open than keyed for the pose not to start
    inside it.
    """
    from metaworld_x.scene import build_model

    model = build_model(scene, variant)
    data = mujoco.MjData(model)
    index = model.joint(joint).id
    if model.jnt_type[index] not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
        raise UserError(f"keyframed clip {clip.skill!r}: yielding prop {joint!r} must be a hinge or slide joint")
    address, upper = model.jnt_qposadr[index], model.jnt_range[index][1]
    robot = robot_geoms(model)
    prop = [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.jnt_bodyid[index]]

    def depth(value: float) -> float:
        data.qpos[address] = value
        mujoco.mj_kinematics(model, data)
        return max(-mujoco.mj_geomDistance(model, data, a, b, 0.05, None) for a in robot for b in prop)

    values = clip.prop(joint)[:, 0].astype(np.float64).copy()
    data.qpos[:] = model.qpos0
    reached = values[0]
    for t in range(clip.num_frames):
        data.qpos[: clip.qpos.shape[1]] = clip.qpos[t]
        reached = max(reached, values[t])
        while reached < upper and depth(reached) > _YIELD_TOLERANCE:
            reached += _YIELD_STEP
        values[t] = reached
    return values


def prop_states(clip: KeyframeClip, fps: float) -> dict:
    """The clip's `prop_joints` and `prop_qpos` [T, P] from the keys' props ({} without props).

    Props are in the scene's frame: `solve_clip`'s floor offset moves the
    robot onto the scene's floor and leaves them where the scene has them.
    """
    joints = [joint for joint, _ in sorted(clip.keys, key=lambda key: key.time)[0].props]
    if not joints:
        return {}
    tracks = key_tracks(clip, {}, fps)
    qpos = [tracks[PROP_TRACK + joint] for joint in joints]
    for i, track in enumerate(qpos):
        if track.shape[1] == 7:  # a free joint: keep its interpolated quaternion unit length
            qpos[i] = np.concatenate([track[:, :3], track[:, 3:] / np.linalg.norm(track[:, 3:], axis=-1, keepdims=True)], axis=-1)
    return {"prop_joints": tuple((joint, q.shape[1]) for joint, q in zip(joints, qpos)),
            "prop_qpos": np.concatenate(qpos, axis=-1)}


def _pose(time: float, pelvis: Vec, rpy: Vec = (0.0, 0.0, 0.0), **points) -> KeyPose:
    return KeyPose(time=time, pelvis=pelvis, pelvis_rpy=rpy, **points)


STAND_PELVIS: Vec = (0.0, 0.0, 0.98)
# Seated on the chair scene's seat: where the sit clip ends and the rise clip begins.
SEATED_PELVIS: Vec = (-0.28, 0.0, 0.78)
SEATED_HANDS: tuple[Vec, Vec] = ((0.08, 0.26, 0.72), (0.08, -0.26, 0.72))

# The one-hand reach: the shared mocap has none (DeepMimic's punch lunges 1.3 m and asks the right shoulder
# for 1.05 of its half range, and a policy never learned it). Here the pelvis sinks 2 cm and leans 0.1 rad so
# the centre of mass stays over the feet while the arm goes forward. The hand ends at chest height with the
# elbow still bent, 0.5 m ahead of the shoulder: the reach task draws its targets within 10 cm of it, and
# the far ones need the arm straightened, not a step.
REACH_PELVIS: Vec = (0.01, 0.0, 0.96)
REACH_RIGHT_HAND: Vec = (0.52, -0.24, 1.28)

# The push scene's box at rest on its table (scene.compose.PUSH_BOX), and the hand sites' x where the paddles'
# tips (10 cm ahead of the hand sites, arms forward) touch its back face: from there on the box moves with them.
_BOX_REST = np.array(PUSH_BOX)
_PUSH_CONTACT_X = PUSH_BOX[0] - BOX_HALF_SIZE[0] - 0.1
_PUSH_HANDS = (0.14, 0.99)  # hand sites' |y| (inside the box's 0.18 half width) and height (the box's centre: 1.0)
PUSH_DISTANCE = PUSH_MARKER[0] - PUSH_BOX[0]  # m the clip pushes the box: onto the marker


def _pushed_box(hand_x: float) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """The push scene's box (free joint qpos), moved on as far as hands at `hand_x` have come since reaching it."""
    x, y, z = _BOX_REST + [max(0.0, hand_x - _PUSH_CONTACT_X), 0.0, 0.0]
    return (("box", (float(x), float(y), float(z), 1.0, 0.0, 0.0, 0.0)),)


def _push(time: float, pelvis: Vec, pitch: float, pushed: float, **feet: Vec) -> KeyPose:
    """A push key: both paddles on the box's back face, the box `pushed` m on from where they met it."""
    x = _PUSH_CONTACT_X + pushed
    y, z = _PUSH_HANDS
    return _pose(time, pelvis, (0.0, pitch, 0.0), left_hand=(x, y, z), right_hand=(x, -y, z),
                 props=_pushed_box(x), **feet)


def push_keys() -> tuple[KeyPose, ...]:
    """Stand, put both hands on the box, then push it 0.2 m along the table in two steps (right foot, then left),
    leaning 0.12 rad with the pelvis kept behind the feet's centre, so the centre of mass stays over the feet
    and the arms, not the weight, move the box. Each step lifts the sole 8 cm and lands 16 cm further on."""
    lift, stride = 0.08, 0.16
    sole_x, sole_y = HOME_SOLE
    step = lambda side, x, z: {f"{side}_foot": (x, sole_y if side == "left" else -sole_y, z)}
    return (
        _pose(0.0, STAND_PELVIS, props=_pushed_box(0.0)),
        _push(1.0, (0.02, 0.0, 0.97), 0.08, 0.0),
        _push(1.6, (0.05, -0.02, 0.97), 0.1, 0.04, **step("right", sole_x + stride / 2, lift)),
        _push(2.2, (0.08, 0.0, 0.97), 0.1, 0.08, **step("right", sole_x + stride, 0.0)),
        _push(2.8, (0.11, 0.02, 0.97), 0.12, 0.14, **step("left", sole_x + stride / 2, lift)),
        _push(3.4, (0.14, 0.0, 0.97), 0.12, PUSH_DISTANCE, **step("left", sole_x + stride, 0.0)),
    )


# The door scene as `metaworld_x.scene` builds it (props.add_door): the door
# plane across x at DEFAULT_PLACES["door"], the hinge on the +y post, the
# handle 0.1 m in from the free edge, 1 m high. The clip opens the door away
# from the robot, as the door task asks (push it open, walk through).
_DOOR_X = DEFAULT_PLACES["door"][0]
_HINGE = np.array([_DOOR_X, DOOR_WIDTH / 2])
_HANDLE_RADIUS = DOOR_WIDTH - 0.1
_HANDLE_HEIGHT = 1.0
# Hand site to the panel's mid-plane: half the panel, the paddle and a margin.
_PALM_CLEARANCE = 0.08
_KEY_STEP = 0.25  # s between the door clip's keys; each footstep takes two
_LIFT = 0.08  # m, a swinging sole's height at mid-step
_SWAY = 0.03  # m, the pelvis's shift over the stance foot at mid-step
# The home pose's soles and hands relative to the pelvis's ground point and
# the pelvis (`home_points`, rounded; a test holds them to it).
HOME_SOLE = (0.018, 0.203)
HOME_HAND = (0.299, 0.214, 0.095)


def on_panel(angle: float, radius: float, height: float) -> np.ndarray:
    """[3] a hand on the door's near face, `radius` m from the hinge, with the door open `angle` rad towards +x."""
    along = np.array([np.sin(angle), -np.cos(angle)])
    near = np.array([-np.cos(angle), -np.sin(angle)])  # the face's normal towards the robot's side
    x, y = _HINGE + radius * along + _PALM_CLEARANCE * near
    return np.array([x, y, height])


def _schedule(points: tuple[tuple[float, float], ...], time: float) -> float:
    """Piecewise-linear value of (time, value) points at `time`, held beyond the ends."""
    times, values = zip(*points)
    return float(np.interp(time, times, values))


def _blend(time: float, start: float, stop: float) -> float:
    """0 before `start`, 1 after `stop`, minimum jerk between."""
    return float(minimum_jerk(np.array((time - start) / (stop - start))))


def door_keys() -> tuple[KeyPose, ...]:
    """Key poses of the door clip, one every _KEY_STEP s: walk up, open with the right hand, left hand on, walk through.

    Every key is sampled from the schedules below, and `smooth` interpolation
    joins them. Footsteps last two key steps: lift, mid-step (sole raised,
    pelvis over the stance foot), land.
    """
    mirror = {"left": np.array([1.0, 1.0, 1.0]), "right": np.array([1.0, -1.0, 1.0])}
    home = {side: np.array(HOME_HAND) * sign for side, sign in mirror.items()}  # hand - pelvis
    steps = (  # (side, lift time, landing sole x); the soles start in the home pose
        ("right", 0.5, 0.33), ("left", 1.0, 0.66), ("right", 1.5, 0.98), ("left", 2.0, 0.98),
        ("right", 3.25, 1.30), ("left", 4.0, 1.62), ("right", 4.75, 1.95), ("left", 5.25, 2.28),
        ("right", 5.75, 2.61), ("left", 6.25, 2.94), ("right", 6.75, 2.94),
    )
    door_angle = ((3.0, 0.0), (4.25, 0.7), (5.5, 1.3))
    pitch = ((0.0, 0.0), (0.5, 0.05), (2.25, 0.05), (2.75, 0.2), (4.5, 0.2), (5.25, 0.05), (6.75, 0.05), (7.25, 0.0))
    height = ((0.0, 0.98), (0.5, 0.96), (6.75, 0.96), (7.25, 0.98))
    duration = steps[-1][1] + 2 * _KEY_STEP
    keys = []
    for time in np.arange(0.0, duration + 1e-9, _KEY_STEP):
        feet = {side: np.array([HOME_SOLE[0], HOME_SOLE[1], 0.0]) * sign for side, sign in mirror.items()}
        sway = 0.0
        for side, lift, x in steps:
            if time >= lift + 2 * _KEY_STEP:
                feet[side][0] = x
            elif time > lift:  # mid-step
                feet[side] = np.array([0.5 * (feet[side][0] + x), feet[side][1], _LIFT])
                sway = -_SWAY * np.sign(feet[side][1])
        pelvis = np.array([0.5 * (feet["left"][0] + feet["right"][0]) - HOME_SOLE[0], sway, _schedule(height, time)])
        hands = {side: pelvis + offset for side, offset in home.items()}
        angle = _schedule(door_angle, time)
        # Right hand: to the handle, then along the opening panel towards the hinge, then back.
        handle = on_panel(angle, _schedule(((3.0, _HANDLE_RADIUS), (4.25, 0.6)), time),
                          _schedule(((3.0, _HANDLE_HEIGHT), (4.25, 1.2)), time))
        on = _blend(time, 1.75, 2.75) * (1.0 - _blend(time, 4.25, 5.0))
        hands["right"] = (1.0 - on) * hands["right"] + on * handle
        # Left hand: takes over on the panel nearer the hinge while the body passes the doorway.
        on = _blend(time, 3.75, 4.25) * (1.0 - _blend(time, 5.5, 6.25))
        hands["left"] = (1.0 - on) * hands["left"] + on * on_panel(angle, 0.45, 1.25)
        point = lambda v: tuple(float(c) for c in v)
        keys.append(_pose(
            float(time), point(pelvis), (0.0, _schedule(pitch, time), 0.0),
            left_hand=point(hands["left"]), right_hand=point(hands["right"]),
            left_foot=point(feet["left"]), right_foot=point(feet["right"]), props=(("door_hinge", (angle,)),),
        ))
    return tuple(keys)

TURN_STEPS = 7  # footsteps of the turn on the spot: 30° each, left foot first, the last one closing the stance


def turn_keys(turn: float = math.pi, steps: int = TURN_STEPS) -> tuple[KeyPose, ...]:
    """Key poses of turning on the spot by `turn` (rad, positive: to the left) in `steps` footsteps, one every
    two key steps as in the door clip (lift, mid-step, land), each foot turned where it lands.

    The stepping foot leads: the left for a left turn. Each lands at the next
    heading (`turn / (steps - 1)` further), placed where the home pose would
    have it at that heading, about the start's ground point; the last step
    closes the stance at the final heading. The pelvis keeps the mean of the
    feet's headings, stands over their midpoint and shifts over the stance
    foot at mid-step."""
    order = ("left", "right") if turn >= 0 else ("right", "left")
    increment = turn / (steps - 1)
    headings = {"left": 0.0, "right": 0.0}
    side_sign = {"left": 1.0, "right": -1.0}

    def sole(side: str, heading: float) -> np.ndarray:
        c, s = math.cos(heading), math.sin(heading)
        x, y = HOME_SOLE[0], side_sign[side] * HOME_SOLE[1]
        return np.array([c * x - s * y, s * x + c * y, 0.0])

    feet = {side: sole(side, 0.0) for side in SIDES}
    keys = [_pose(0.0, STAND_PELVIS)]
    time = 0.5
    for step in range(steps):
        side = order[step % 2]
        other = order[(step + 1) % 2]
        target = headings[other] if step == steps - 1 else (step + 1) * increment
        landing = sole(side, target)
        for phase in ("mid", "land"):
            time += _KEY_STEP
            if phase == "mid":
                heading = 0.5 * (headings[side] + target)
                swing = 0.5 * (feet[side] + landing) + np.array([0.0, 0.0, _LIFT])
                placed = {side: swing, other: feet[other]}
                yaws = {side: heading, other: headings[other]}
            else:
                feet[side], headings[side] = landing, target
                placed, yaws = dict(feet), dict(headings)
            pelvis_yaw = 0.5 * (yaws["left"] + yaws["right"])
            ground = 0.5 * (placed["left"] + placed["right"])
            ground[2] = 0.0
            forward = np.array([math.cos(pelvis_yaw), math.sin(pelvis_yaw), 0.0])
            pelvis = ground - HOME_SOLE[0] * forward + np.array([0.0, 0.0, STAND_PELVIS[2]])
            if phase == "mid":  # over the stance foot
                towards = placed[other][:2] - ground[:2]
                pelvis[:2] += _SWAY * towards / max(np.linalg.norm(towards), 1e-9)
            point = lambda v: tuple(float(c) for c in v)
            keys.append(KeyPose(
                float(time), point(pelvis), (0.0, 0.0, pelvis_yaw), left_foot=point(placed["left"]),
                right_foot=point(placed["right"]), left_foot_yaw=float(yaws["left"]), right_foot_yaw=float(yaws["right"]),
                left_hand=point(pelvis + _rotated_hand("left", pelvis_yaw)),
                right_hand=point(pelvis + _rotated_hand("right", pelvis_yaw)),
            ))
    return tuple(keys)


def rise_keys() -> tuple[KeyPose, ...]:
    """Key poses of getting up from the chair scene's seat: seated still, the pelvis slid forward to the seat's
    front, the trunk leant well forward over the feet, the lift-off, and standing in the home pose.

    The feet stay where the home pose has them: the chair's base is solid to the seat's front edge (x = -0.1),
    so they cannot step back under it."""
    forward = {"left_hand": (0.25, 0.25, 0.8), "right_hand": (0.25, -0.25, 0.8)}
    return (
        _pose(0.0, SEATED_PELVIS, left_hand=SEATED_HANDS[0], right_hand=SEATED_HANDS[1]),
        _pose(0.5, SEATED_PELVIS),
        _pose(1.5, (-0.16, 0.0, 0.77), (0.0, 0.3, 0.0), left_hand=(0.15, 0.25, 0.75), right_hand=(0.15, -0.25, 0.75)),
        _pose(2.5, (-0.14, 0.0, 0.77), (0.0, 0.7, 0.0), **forward),
        _pose(3.5, (-0.06, 0.0, 0.86), (0.0, 0.45, 0.0), left_hand=(0.25, 0.24, 0.95), right_hand=(0.25, -0.24, 0.95)),
        KeyPose(4.5, STAND_PELVIS, home_hands=True),
    )


def _rotated_hand(side: str, heading: float) -> np.ndarray:
    """The home pose's hand relative to the pelvis, turned to `heading`."""
    x, y, z = HOME_HAND[0], (1.0 if side == "left" else -1.0) * HOME_HAND[1], HOME_HAND[2]
    c, s = math.cos(heading), math.sin(heading)
    return np.array([c * x - s * y, s * x + c * y, z])


# The shipped keyframed clips. Hands are hand sites (end of the forearm),
# feet sole centres. Numbers are in the scenes' frame (metaworld_x.scene).
KEYFRAMED: dict[str, KeyframeClip] = {
    "sit": KeyframeClip(
        skill="sit",
        notes="stand, lean forward with the hips back, lower onto a 0.46 m seat centred at x = -0.3, stay seated",
        hold=1.5,
        keys=(
            _pose(0.0, STAND_PELVIS),
            _pose(1.0, (-0.12, 0.0, 0.86), (0.0, 0.35, 0.0), left_hand=(0.3, 0.22, 0.85), right_hand=(0.3, -0.22, 0.85)),
            _pose(2.0, (-0.26, 0.0, 0.78), (0.0, 0.25, 0.0), left_hand=(0.2, 0.24, 0.78), right_hand=(0.2, -0.24, 0.78)),
            _pose(2.8, SEATED_PELVIS, left_hand=SEATED_HANDS[0], right_hand=SEATED_HANDS[1]),
        ),
    ),
    # The shared mocap has no one rising from a chair. Sit's keys played backwards do not stand up: replayed through
    # the servos the pelvis stayed on the seat, its centre of mass behind the feet. As people do, this one slides
    # forward to the seat's front and leans well forward (0.7 rad) with the arms forward before lifting off.
    "rise": KeyframeClip(
        skill="rise",
        notes=(
            "seated on the chair scene's seat (centre x = -0.3), slide forward to the seat's front, lean well forward "
            "with the arms forward, stand up over the feet and stand"
        ),
        hold=1.5,
        keys=rise_keys(),
    ),
    # The shared mocap has no one turning round. A sit expert sits down with the chair behind it, so a robot that
    # walks up to a chair must first turn its back on it.
    "turn": KeyframeClip(
        skill="turn",
        notes=f"turn round on the spot to the left, {TURN_STEPS} footsteps of 30° each (the last closing the stance), and stand",
        hold=1.0,
        smooth=True,
        keys=turn_keys(),
    ),
    "reach_one_hand": KeyframeClip(
        skill="reach_one_hand",
        notes=(
            "from the home pose, lean a little forward and raise the right hand to a point 0.5 m ahead of the "
            "right shoulder at chest height (elbow still bent), hold it there; the feet stay put"
        ),
        hold=1.0,
        keys=(
            _pose(0.0, STAND_PELVIS),
            _pose(1.0, REACH_PELVIS, (0.0, 0.1, 0.0), right_hand=REACH_RIGHT_HAND),
        ),
    ),
    "push": KeyframeClip(
        skill="push",
        notes=(
            "stand at the table (push scene), put both paddles on the back face of the box on it, push the box "
            f"{PUSH_DISTANCE:.1f} m along the table top onto the red marker in two steps (right foot, then left), "
            "leaning a little, then hold"
        ),
        hold=1.0,
        keys=push_keys(),
    ),
    "door": KeyframeClip(
        skill="door",
        notes=(
            "walk 1 m up to the door (door scene, plane at x = 1.5), right hand to the handle, push the door "
            "open away from the robot (hinge on the left post), the left hand takes over on the panel while "
            "stepping through the doorway, walk on past the door_through site (x = 2.7) and stop"
        ),
        hold=0.75,
        smooth=True,
        keys=door_keys(),
        scene=("door", "h1_hands"),
        yielding=("door_hinge",),
    ),
}
