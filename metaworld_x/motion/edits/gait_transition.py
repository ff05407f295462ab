"""A gait transition made from two looping clips: walk, speed up, run.

No clip here starts a run from rest: DeepMimic's run is one sprint cycle, and a
run expert trained only on it cannot start from the home pose a router starts
it in (every home start falls on its first steps). People speed up from a walk
into a run over a few strides; this module makes that clip from the walk and
run cycles already in the library:

1. Each cycle is indexed by its gait phase p in [0, 1), starting when the left
   foot touches down, and split into a straight line (its stride per cycle) and
   the pose's swing about it (root offset, pelvis rotation without the
   clip's heading, joint angles).
2. The phase advances at a rate blended from one cadence to the other by a
   minimum-jerk weight a(t): 0 while walking, 1 once running. The pose at
   phase p is both cycles' poses at p, blended by a(t) (angles and offsets
   linearly, rotations by slerp); the root travels the blended stride per
   cycle, so a foot in stance in both cycles stays nearly still.
3. The blend only gives targets: the whole clip then goes through the same IK,
   floor, foot-pinning and contact stages as retargeted mocap
   (`retarget.solve_clip`), which pins every stance foot exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip
from metaworld_x.motion.contacts import ContactConfig
from metaworld_x.motion.ik import home_qpos
from metaworld_x.motion.keyframes import minimum_jerk
from metaworld_x.motion.retarget import PoseKinematics, RetargetConfig, SourceInfo, solve_clip
from metaworld_x.motion.scaling import KEYPOINT_NAMES, SIDES, ScaledTargets
from metaworld_x.robot.constants import HOME_ROOT_HEIGHT, JOINT_NAMES


@dataclass(frozen=True)
class TransitionConfig:
    """Timing of a walk-to-run clip (seconds)."""

    before_s: float = 0.6
    """Plain walking first: half a walk cycle, in which the frame nearest the home pose lies (where a router's
    clock starts). Short, because the run task pays by speed: at 1 m/s a step earns about 0.3 of what a step
    at 4.4 m/s does, so each second of walking costs about 35 of h1-run's bar of 700 per 1000 steps."""
    ramp_s: float = 1.5
    """The speed-up, from the first cycle's cadence and stride to the second's, over about three strides."""
    total_s: float = 21.0
    """The whole clip; the rest is running. Longer than a router's 1000-step (20 s) episode, so the
    reference never holds a last frame while the robot runs."""
    speed_blend: bool = False
    """Blend the speed by the ramp's weight, the cadence following as speed / stride (from rest: the second
    cycle's cadence throughout, the strides growing). Off, cadence and stride each blend by it, so from rest
    the speed follows the weight's square: run_rest stood still for 1.2 s of its 4 s ramp, then asked for
    2.6 m/s², twice what the run expert reached from home, and every start on the clip fell behind it."""

    def __post_init__(self) -> None:
        if self.before_s < 0 or self.ramp_s <= 0 or self.total_s < self.before_s + self.ramp_s:
            raise UserError(
                f"transition timing must have before_s >= 0, ramp_s > 0 and total_s >= before_s + ramp_s; got "
                f"{self.before_s}, {self.ramp_s}, {self.total_s}"
            )


@dataclass(frozen=True)
class GaitCycle:
    """One looping clip as a function of its gait phase (p = 0: the left foot touches down).

    Attributes:
      period: seconds per cycle.
      stride: metres the root travels per cycle, along the clip's heading.
      joint_pos: [N, 19] angles at phases i / N.
      offset: [N, 3] root position minus the straight line it travels, in the heading frame.
      rotation: [N] pelvis rotations with the clip's heading removed.
    """

    period: float
    stride: float
    joint_pos: np.ndarray
    offset: np.ndarray
    rotation: Rotation

    @classmethod
    def of(cls, clip: Clip) -> GaitCycle:
        if not clip.info.get("loop", False):
            raise UserError(f"clip {clip.skill!r} is not a looping cycle; a gait transition needs two")
        count = clip.num_frames - 1  # the last frame is the next cycle's first, moved on
        shift = clip.root_pos[-1] - clip.root_pos[0]
        heading = np.arctan2(shift[1], shift[0])
        unturn = Rotation.from_euler("z", -heading)
        start = _touchdown(clip.contacts[:count, 0], clip.skill)
        frames = (start + np.arange(count)) % count
        line = np.outer(np.arange(count) / count, shift)  # where a steady walker's root would be
        rooted = clip.root_pos[frames] - clip.root_pos[start] * [1.0, 1.0, 0.0]  # heights stay absolute
        wrapped = frames < start  # frames of the next cycle, moved on by one shift
        rooted[wrapped] += shift
        return cls(
            period=count / clip.fps,
            stride=float(np.linalg.norm(shift[:2])),
            joint_pos=clip.joint_pos[frames],
            offset=unturn.apply(rooted - line),
            rotation=unturn * Rotation.from_quat(clip.root_quat[frames], scalar_first=True),
        )

    @classmethod
    def still(cls, qpos: np.ndarray) -> GaitCycle:
        """A pose held at rest as a cycle: no cadence, no stride. Blending out of it is starting from standing."""
        return cls(period=np.inf, stride=0.0, joint_pos=qpos[None, 7:].copy(), offset=np.array([[0.0, 0.0, qpos[2]]]),
                   rotation=Rotation.from_quat(qpos[None, 3:7], scalar_first=True))

    @property
    def speed(self) -> float:
        """Metres per second along the heading (0 for a pose held still)."""
        return self.stride / self.period

    def at(self, phase: np.ndarray) -> tuple[np.ndarray, np.ndarray, Rotation]:
        """(joint_pos [T, 19], offset [T, 3], rotation [T]) at phases in [0, 1), interpolated around the cycle."""
        count = len(self.joint_pos)
        position = (np.asarray(phase) % 1.0) * count
        lower = np.floor(position).astype(int) % count
        upper = (lower + 1) % count
        weight = (position - np.floor(position))[:, None]
        lerp = lambda series: (1 - weight) * series[lower] + weight * series[upper]
        return lerp(self.joint_pos), lerp(self.offset), _slerp(self.rotation[lower], self.rotation[upper], weight)


def _slerp(start: Rotation, end: Rotation, weight: np.ndarray) -> Rotation:
    """Frame-wise spherical interpolation from `start` to `end` by `weight` [T, 1] in [0, 1]."""
    return start * Rotation.from_rotvec((start.inv() * end).as_rotvec() * weight)


def blend_poses(start: np.ndarray, end: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """[T, 26] poses (root position, quaternion w-first, joints) from `start` to `end` ([T, 26] or [26]) by
    `weight` [T, 1]: positions and angles linearly, the root's orientation by slerp."""
    start, end = np.broadcast_to(start, (len(weight), start.shape[-1])), np.broadcast_to(end, (len(weight), end.shape[-1]))
    blended = (1 - weight) * start + weight * end
    blended[:, 3:7] = _slerp(Rotation.from_quat(start[:, 3:7], scalar_first=True),
                             Rotation.from_quat(end[:, 3:7], scalar_first=True), weight).as_quat(scalar_first=True)
    return blended


def _touchdown(left_contact: np.ndarray, skill: str) -> int:
    """The first frame where the left foot touches down (contact rises), wrapping around the cycle."""
    rises = np.flatnonzero(left_contact & ~np.roll(left_contact, 1))
    if len(rises) == 0:
        raise UserError(f"clip {skill!r}: the left foot never touches down in the cycle; its contacts are needed for the phase")
    return int(rises[0])


def blend_weight(times: np.ndarray, config: TransitionConfig) -> np.ndarray:
    """[T] 0 before the ramp, 1 after it, minimum jerk between."""
    return minimum_jerk((times - config.before_s) / config.ramp_s)


def transition_qpos(first: GaitCycle, second: GaitCycle, config: TransitionConfig, fps: float,
                    start_phase: float = 0.0) -> np.ndarray:
    """[T, 26] the blended walk-speed-up-run poses, starting at the origin facing +x, at phase `start_phase`."""
    times = np.arange(int(round(config.total_s * fps)) + 1) / fps
    weight = blend_weight(times, config)
    stride = (1 - weight) * first.stride + weight * second.stride
    if config.speed_blend:
        speed = (1 - weight) * first.speed + weight * second.speed
        # from rest, speed and stride are both 0 at the ramp's start, where their ratio's limit is the cadence
        rate = np.divide(speed, stride, out=np.full_like(speed, 1 / second.period), where=stride > 0)
    else:
        rate = (1 - weight) / first.period + weight / second.period  # cycles per second
        speed = rate * stride
    # Trapezoid integration: the phase and the distance at each frame.
    phase = start_phase + np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) / fps)])
    forward = np.concatenate([[0.0], np.cumsum(0.5 * (speed[1:] + speed[:-1]) / fps)])
    joints_a, offset_a, rotation_a = first.at(phase)
    joints_b, offset_b, rotation_b = second.at(phase)
    w = weight[:, None]
    joints = (1 - w) * joints_a + w * joints_b
    offset = (1 - w) * offset_a + w * offset_b
    rotation = _slerp(rotation_a, rotation_b, w)
    root = offset + np.stack([forward, np.zeros_like(forward), np.zeros_like(forward)], axis=1)
    return np.concatenate([root, rotation.as_quat(scalar_first=True), joints], axis=1)


def targets_from_poses(model: mujoco.MjModel, qpos: np.ndarray) -> ScaledTargets:
    """IK targets that the poses `qpos` [T, 26] reach exactly: their keypoints and trunk and foot frames."""
    kinematics = PoseKinematics(model)
    keypoints = kinematics.keypoints(qpos)
    feet = {side: f"{side}_ankle_link" for side in SIDES}
    rot = kinematics.orientations(qpos, ["pelvis", "torso_link", *feet.values()])
    return ScaledTargets.of_robot({key: keypoints[:, k] for k, key in enumerate(KEYPOINT_NAMES)}, rot["pelvis"],
                                  rot["torso_link"], {side: rot[body] for side, body in feet.items()})


def gait_transition(first: Clip, second: Clip, skill: str, *, model: mujoco.MjModel,
                    config: TransitionConfig | None = None, progress: bool = False) -> Clip:
    """A clip that plays `first`'s cycle, speeds up into `second`'s and keeps it up (see the module docstring)."""
    if first.fps != second.fps:
        raise UserError(f"clips {first.skill!r} and {second.skill!r} have different rates ({first.fps}, {second.fps} fps)")
    check_joints(first, second)
    source = joined_source(first, second, f"{first.source_file} + {second.source_file}")
    return _solve(GaitCycle.of(first), GaitCycle.of(second), [first.skill, second.skill], skill, model, config,
                  RetargetConfig(fps=first.fps, align_start=False), source, progress)


def from_rest(cycle: Clip, skill: str, *, model: mujoco.MjModel, config: TransitionConfig | None = None,
              progress: bool = False) -> Clip:
    """A clip that stands in the home pose, goes over into `cycle`'s gait as the ramp's weight rises (its cadence
    from zero, its pose blended out of home's: for crawl, going down onto hands and knees) and keeps it up.
    A router starts every expert standing; a cycle alone (crawl) never stands, so its expert cannot start there."""
    check_joints(cycle)
    source = SourceInfo(kind="mocap", file=cycle.source_file, licence=cycle.licence, attribution=cycle.attribution)
    retarget = poses_from_rest_config(cycle.fps)
    return _solve(GaitCycle.still(home_qpos(model, HOME_ROOT_HEIGHT)), GaitCycle.of(cycle), ["home", cycle.skill], skill,
                  model, config, retarget, source, progress)


def to_rest(cycle: Clip, skill: str, *, model: mujoco.MjModel, config: TransitionConfig | None = None,
            progress: bool = False) -> Clip:
    """A clip that plays `cycle`'s gait and comes to a stop in the home pose as the ramp's weight rises, then stands:
    `from_rest` the other way round. With `speed_blend` (the default here) the speed falls by the ramp's weight at
    the gait's cadence, so the strides shorten step by step and the last steps close the feet into home's stance.
    No clip here walks into a stop, and a skill that stands still (turn, sit, reach) handed a robot at walking
    speed falls: this is the motion that stops it. Starts at the cycle's left touchdown, facing +x."""
    check_joints(cycle)
    config = config or TransitionConfig(before_s=0.0, ramp_s=1.5, total_s=4.0, speed_blend=True)
    source = SourceInfo(kind="mocap", file=f"{cycle.source_file} (into the home pose)", licence=cycle.licence,
                        attribution=cycle.attribution)
    return _solve(GaitCycle.of(cycle), GaitCycle.still(home_qpos(model, HOME_ROOT_HEIGHT)), [cycle.skill, "home"], skill,
                  model, config, poses_from_rest_config(cycle.fps), source, progress)


def poses_from_rest_config(fps: float) -> RetargetConfig:
    """How poses blended out of the home pose go through the IK (`from_rest`, `lead_in.with_lead_in`).

    The poses stand on z = 0. A floor found from the frames would sit below it: mid-way the blend puts the
    knees through the floor for a second, which lifted a whole 4 s clip 13 cm off the ground. On that floor
    the crawl's toes brush it for 3 frames at 0.5 m/s, which the default 0.6 m/s took for stances it could not
    pin (2.4 cm/s skating); a sole that fast is not standing."""
    return RetargetConfig(fps=fps, align_start=False, floor_percentile=None, contacts=ContactConfig(speed=0.3))


def check_joints(*clips: Clip) -> None:
    if any(clip.joint_pos.shape[1] != len(JOINT_NAMES) for clip in clips):
        raise UserError("the clips must be made for this robot's joints; rebuild them with scripts/make_motion_library.py")


def joined_source(first: Clip, second: Clip, file: str) -> SourceInfo:
    """The source of a clip made from two: both licences and attributions, each once if they agree."""
    return SourceInfo(
        kind="mocap", file=file,
        licence=first.licence if first.licence == second.licence else f"{first.licence}; {second.licence}",
        attribution=first.attribution if first.attribution == second.attribution else f"{first.attribution}; {second.attribution}",
    )


def _solve(first: GaitCycle, second: GaitCycle, names: list[str], skill: str, model: mujoco.MjModel,
           config: TransitionConfig | None, retarget: RetargetConfig, source: SourceInfo, progress: bool) -> Clip:
    """The blended poses as IK targets, through the same stages as retargeted mocap."""
    config = config or TransitionConfig()
    qpos = transition_qpos(first, second, config, retarget.fps)
    info = {"transition": names, "before_s": config.before_s, "ramp_s": config.ramp_s,
            "speed_blend": config.speed_blend, "loop": False, "scale": 1.0}
    return solve_clip(targets_from_poses(model, qpos), skill, model=model, config=retarget, source=source,
                      info=info, progress=progress)
