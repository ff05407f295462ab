"""What in a clip the robot cannot follow, found before any training is spent (`metaworld-x motion check`).

Five checks, each on the clip's own poses (no simulation), each naming the frames and how to fix them:

- `joint limits`: angles outside a joint's range (`quality.limit_excess`);
- `self-collision`: two of the robot's own bodies inside each other (its geoms do not collide with each other in
  simulation, so a policy could pass an arm through the torso; a robot cannot);
- `floor`: the body below the floor (`support.support_trace`'s lowest point, the `quality` penetration goal);
- `balance`: the centre of mass outside the support polygon, with something on the floor, for longer than a step
  takes (`support.support_trace`'s margin; airborne frames are ballistic and not counted);
- `joint speed`: joints turning faster than the H1's motors can (`JOINT_SPEED_LIMITS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from metaworld_x.motion.clip import Clip
from metaworld_x.motion.quality import GOALS, limit_excess
from metaworld_x.motion.support import SupportConfig, support_trace
from metaworld_x.robot.constants import JOINT_NAMES
from metaworld_x.robot.parts import robot_geoms

# The H1's motor speed limits (rad/s), per joint kind: the `velocity` of each joint's <limit> in Unitree's
# h1_description/urdf/h1.urdf (BSD-3-Clause, Copyright Unitree Robotics). The MJCF has none, so the simulation does
# not enforce them.
JOINT_SPEED_LIMITS = {"hip_yaw": 23.0, "hip_roll": 23.0, "hip_pitch": 23.0, "knee": 14.0, "ankle": 9.0,
                      "torso": 23.0, "shoulder_pitch": 9.0, "shoulder_roll": 9.0, "shoulder_yaw": 20.0, "elbow": 20.0}
CHECKS = ("joint limits", "self-collision", "floor", "balance", "joint speed")


@dataclass(frozen=True)
class CheckConfig:
    """How much of each problem a clip may have."""

    self_collision_m: float = 0.01
    """Two bodies count as colliding when their geoms overlap deeper than this (m); the geoms are rough capsules."""
    floor_m: float = GOALS["penetration"]
    """The body may dip this far (m) below the floor: a retargeted clip's penetration goal."""
    outside_m: float = 0.05
    """The centre of mass counts as outside the support when it is this far (m) past the polygon's edge."""
    outside_s: float = 1.0
    """... and the balance check fails when that lasts longer than this (s): the library's walking clips leave the
    support for up to 0.5 s of a step, the sit clip (on a chair the floor scene lacks) for 2.7 s."""
    speed_s: float = 0.1
    """A joint may exceed its motor's speed for this long in all (s): a spike of a frame or two is smoothed away by
    the servo's lag, a sustained excess is not."""


@dataclass(frozen=True)
class Finding:
    """One check's verdict on a clip."""

    check: str
    """One of CHECKS."""
    ok: bool
    summary: str
    """What was found, with the frames (clean: what was measured)."""
    fix: str = ""
    """How to fix it ("" when ok)."""


def joint_speed_limits() -> np.ndarray:
    """[19] each joint's motor speed limit (rad/s) in JOINT_NAMES order."""
    return np.array([next(v for kind, v in JOINT_SPEED_LIMITS.items() if name.endswith(kind)) for name in JOINT_NAMES])


def _at(frames: np.ndarray, fps: float) -> str:
    """When frames [N] (indices, ascending) happen: 'at 1.20 s', 'at 1.20-1.46 s' for one stretch, 'in 9 frames between
    1.20 and 3.02 s' for several."""
    first, last = int(frames.min()), int(frames.max())
    if first == last:
        return f"at {first / fps:.2f} s"
    if last - first + 1 == len(frames):
        return f"at {first / fps:.2f}-{last / fps:.2f} s"
    return f"in {len(frames)} frames between {first / fps:.2f} and {last / fps:.2f} s"


def _longest_run(flags: np.ndarray) -> tuple[int, int]:
    """(start, length) of the longest run of True in `flags` [T]; length 0 when there is none."""
    best_start, best_length, start = 0, 0, None
    for t, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = t
        elif not flag and start is not None:
            if t - start > best_length:
                best_start, best_length = start, t - start
            start = None
    return best_start, best_length


def check_joint_limits(model: mujoco.MjModel, clip: Clip) -> Finding:
    excess = limit_excess(model, clip.joint_pos)
    outside = excess > 1e-3
    if not outside.any():
        return Finding("joint limits", True, "every joint within its range")
    parts = []
    for j in np.flatnonzero(outside.any(axis=0)):
        frames = np.flatnonzero(outside[:, j])
        parts.append(f"{JOINT_NAMES[j]} up to {np.degrees(excess[:, j].max()):.0f}° past its range {_at(frames, clip.fps)}")
    return Finding("joint limits", False, "; ".join(parts),
                   "retarget the source onto the robot, which keeps every joint in range (`metaworld-x motion retarget"
                   " SOURCE --skill NAME --out FILE`, or give --clip the .bvh/.txt itself); a clip made elsewhere must"
                   " keep each joint within the robot's range")


def self_collision_model(model: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of `model` whose robot geoms collide with each other (parent and child bodies still do not)."""
    import copy

    model = copy.deepcopy(model)
    geoms = robot_geoms(model)
    model.geom_conaffinity[geoms] |= model.geom_contype[geoms]
    bodies = np.unique(model.geom_bodyid[geoms])
    model.body_conaffinity[bodies] |= model.body_contype[bodies]  # the broad phase filters bodies by these first
    return model


def self_collisions(model: mujoco.MjModel, qpos: np.ndarray, ignore: set | None = None) -> dict[tuple[str, str], np.ndarray]:
    """{(body, body): [T] overlap depth (m)} of robot body pairs that overlap in some of the poses `qpos` [T, nq],
    except the pairs in `ignore` (body name pairs); `model` from `self_collision_model`."""
    data = mujoco.MjData(model)
    robot = set(robot_geoms(model).tolist())
    depths: dict[tuple[str, str], np.ndarray] = {}
    for t, pose in enumerate(qpos):
        data.qpos[:] = pose[: model.nq]
        mujoco.mj_fwdPosition(model, data)
        for contact in data.contact[: data.ncon]:
            a, b = int(contact.geom1), int(contact.geom2)
            if a not in robot or b not in robot:
                continue
            pair = tuple(sorted(model.body(model.geom_bodyid[g]).name for g in (a, b)))
            if pair[0] == pair[1] or (ignore and pair in ignore):
                continue
            depth = depths.setdefault(pair, np.zeros(len(qpos)))
            depth[t] = max(depth[t], -float(contact.dist))
    return depths


def check_self_collision(model: mujoco.MjModel, clip: Clip, config: CheckConfig) -> Finding:
    from metaworld_x.motion.ik import home_qpos

    colliding = self_collision_model(model)
    # bodies the robot's own geometry overlaps standing at home are built that way, not a pose's doing
    built = {pair for pair, depth in self_collisions(colliding, home_qpos(colliding)[None]).items() if depth.max() > 0}
    found = {pair: depth for pair, depth in self_collisions(colliding, clip.qpos, built).items()
             if depth.max() > config.self_collision_m}
    if not found:
        return Finding("self-collision", True, f"no two bodies overlap by more than {config.self_collision_m * 100:.0f} cm")
    parts = [f"{a} into {b} up to {depth.max() * 100:.0f} cm {_at(np.flatnonzero(depth > config.self_collision_m), clip.fps)}"
             for (a, b), depth in sorted(found.items(), key=lambda item: -item[1].max())]
    return Finding("self-collision", False, "; ".join(parts),
                   "the robot's limbs are thicker than a person's: move them apart in the source at those times (arms"
                   " out from the body), or cut that segment out (`motion retarget --start/--end`)")


def check_floor(model: mujoco.MjModel, clip: Clip, config: CheckConfig, height: np.ndarray) -> Finding:
    below = height < -config.floor_m
    if not below.any():
        return Finding("floor", True, f"nothing more than {config.floor_m * 100:.0f} cm below the floor (deepest"
                                      f" {max(0.0, -float(height.min())) * 100:.1f} cm)")
    frames = np.flatnonzero(below)
    return Finding("floor", False, f"the body is {-height.min() * 100:.1f} cm below the floor in {len(frames)} frames"
                                   f" {_at(frames, clip.fps)}",
                   "retarget the source, which lifts every frame out of the floor (`metaworld-x motion retarget`), or"
                   f" raise the clip's root_pos z by {-height.min() * 100:.1f} cm in those frames")


def check_balance(clip: Clip, config: CheckConfig, height: np.ndarray, margin: np.ndarray) -> Finding:
    grounded = height <= SupportConfig().airborne
    outside = grounded & (margin < -config.outside_m)
    start, length = _longest_run(outside)
    seconds = length / clip.fps
    if seconds <= config.outside_s:
        return Finding("balance", True, f"the centre of mass leaves the support by more than {config.outside_m * 100:.0f} cm"
                                        f" for {seconds:.2f} s at most (limit {config.outside_s:g} s)")
    frames = np.arange(start, start + length)
    return Finding("balance", False, f"the centre of mass is {-margin[frames].min() * 100:.0f} cm past the support polygon"
                                     f" for {seconds:.2f} s {_at(frames, clip.fps)}, longer than a step lasts",
                   "the robot falls there unless the pose is held up by something the floor scene lacks (a chair, a"
                   " wall, a hand on a table); move the pelvis over the feet in the source, or cut that segment out"
                   " (`motion retarget --start/--end`)")


def check_joint_speed(clip: Clip, config: CheckConfig) -> Finding:
    limits = joint_speed_limits()
    speed = np.abs(np.gradient(clip.joint_pos, 1.0 / clip.fps, axis=0))  # [T, 19] central differences
    over = speed > limits
    allowed = config.speed_s * clip.fps
    fast = [j for j in range(len(JOINT_NAMES)) if over[:, j].sum() > allowed]
    if not fast:
        worst = int(np.argmax((speed / limits).max(axis=0)))
        return Finding("joint speed", True, f"every joint within its motor's speed (closest: {JOINT_NAMES[worst]} at"
                                            f" {speed[:, worst].max():.1f} of {limits[worst]:g} rad/s)")
    parts = [f"{JOINT_NAMES[j]} up to {speed[:, j].max():.1f} rad/s (motor limit {limits[j]:g}) for"
             f" {over[:, j].sum() / clip.fps:.2f} s {_at(np.flatnonzero(over[:, j]), clip.fps)}" for j in fast]
    slower = float(max(speed[:, j].max() / limits[j] for j in fast))
    return Finding("joint speed", False, "; ".join(parts),
                   f"play the motion {slower:.1f} times slower: stretch the source's frame time by that much (a BVH's"
                   " `Frame Time`, the first number of each DeepMimic frame) before retargeting, or smooth the fast"
                   " part out of the source")


def check_clip(clip: Clip, model: mujoco.MjModel, config: CheckConfig = CheckConfig()) -> list[Finding]:
    """Each of CHECKS on `clip`, for the robot `model` (bare, no scene), in that order."""
    trace = support_trace(model, clip.qpos, clip.fps)
    return [
        check_joint_limits(model, clip),
        check_self_collision(model, clip, config),
        check_floor(model, clip, config, trace.height),
        check_balance(clip, config, trace.height, trace.margin),
        check_joint_speed(clip, config),
    ]
