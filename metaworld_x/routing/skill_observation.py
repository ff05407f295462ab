"""Each expert's own tracking observation, rebuilt inside a scene it was not trained in.

An expert was trained on `Tracking.features`: the phase of its clip, then for
each look-ahead s the clip's frame at t + s (joint angles, root offset and
keypoint offsets from the robot in the robot's heading frame, root
orientation), then its objective's features. Inside a router episode no clip
is being tracked, so each expert gets

- its own reference clock t (seconds since the episode started, advancing
  by one control step per step, whatever the router's weights), and
- its reference re-anchored to the robot: the clip's future frames are
  expressed relative to the clip's frame at t (horizontal root position and
  yaw) and placed at the robot's current horizontal root position and yaw.
  Heights are left as the clip has them, exactly as in training.
  The exception is an expert whose clip moves props (push's box, the door),
  or starts on one (rise, seated on the chair), in a scene that lays them out as its own training scene does, with the
  robot starting where the clip starts (`clip_in_place`): there the clip is
  where the props are, so it sees the clip in place, as it did in training.
  Re-anchored, the door expert's reference drifts with every step it falls
  behind, and it walks on past the doorway's timing (9/10 and a fall after
  passing through, against 10/10 in place).
  The other exception is an expert trained with its clip anchored once
  (`home_anchor` "once"): in a sequence whose current sub-goal names an
  anchor (`Subgoal.anchor`), its clip begins there and stays, as in training,
  so the skill ends where the sub-goal wants the robot (`anchored`).

Right after a tracking reset the robot stands exactly on its reference, so
the re-anchoring is the identity there and the features equal the tracking
environment's (tested). The objective's features come from the scene when the
scene holds every object the objective reads ("scene"), and from the scene's
own task variables when the scene runs the expert's own objective ("shared":
the reach expert must aim at the target the scene drew and shows, not at one
of its own); otherwise they are the values the expert saw at the start of its
own training episodes ("frozen"), recorded once. Nothing is padded or truncated: every part and its size is
listed in the expert's `obs_layout` and checked against its policy.
"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from metaworld_x.envs.observations import yaw
from metaworld_x.envs.reference import frame_at, ground_pose, moved_on_ground, reanchor
from metaworld_x.envs.rotations import multiply as quat_mul
from metaworld_x.errors import UserError

PROPRIOCEPTION = "proprioception"


def tracking_obs_layout(tracking, proprioception_size: int, objective_size: int) -> list[list]:
    """[[part, size], ...] of a Tracking task's policy observation, in order (what policy.json records)."""
    keypoints = len(tracking.reference.keypoint_names)
    layout = [[PROPRIOCEPTION, proprioception_size], ["phase", 2]]
    for steps in tracking.config.future_steps:
        layout += [[f"ref+{steps}/joint_pos", 19], [f"ref+{steps}/root_offset", 3], [f"ref+{steps}/root_quat", 4],
                   [f"ref+{steps}/keypoint_offsets", 3 * keypoints]]
    if objective_size:
        layout.append([f"objective/{tracking.objective.name}", objective_size])
    return layout


def reference_features(tracking, view, clip_time, clip: int = 0, in_place: bool = False, turn=0.0, anchor=None,
                       start_time: float = 0.0):
    """[2 + n_future·(26 + 3K)] phase and future frames as Tracking.reference_features, re-anchored to the robot
    (or, `in_place`, where the clip has them). `turn` (rad) turns the re-anchored clip about the robot's root:
    a locomotion expert that follows it heads that much further left (`steering_turn`). `anchor` (ground pose [3],
    active): where active, the clip is instead moved once so that its frame at `start_time` stands on that pose,
    and stays there (`Subgoal.anchor`)."""
    if in_place:
        return tracking.reference_features(view, clip, clip_time)
    now = frame_at(tracking.reference, clip, clip_time)
    half = 0.5 * jnp.asarray(turn, jnp.float32)
    heading = quat_mul(jnp.stack([jnp.cos(half), 0.0, 0.0, jnp.sin(half)]), view.root_quat)

    def follow(target):
        return reanchor(target, now, view.root_pos, heading)

    if anchor is None:
        return tracking.reference_features(view, clip, clip_time, follow)
    pose, active = anchor
    start = frame_at(tracking.reference, clip, jnp.float32(start_time))
    source = ground_pose(start.root_pos, start.root_quat)

    def place(target):
        fixed = moved_on_ground(target, source, pose)
        return jax.tree.map(lambda a, b: jnp.where(active, a, b), fixed, follow(target))

    return tracking.reference_features(view, clip, clip_time, place)


@dataclass(frozen=True)
class SkillObservation:
    """How one expert's observation is built in a scene. Hashable: it sits inside a jitted task."""

    name: str
    """The expert's name (its folder in experts/)."""
    tracking: object
    """The expert's own Tracking task (metaworld_x.experts.environment.expert_task of its spec)."""
    objective_source: str
    """'scene' (computed from the scene with the expert's own task variables), 'shared' (the scene's objective is
    the expert's: computed with the scene's task variables), 'frozen' (the training start's values) or 'none'."""
    frozen_objective: tuple[float, ...] = ()
    """The objective's features at the start of a training episode, when objective_source is 'frozen'."""
    clip: int = 0
    """Which of the expert's clips drives its reference (multi-clip experts: the first)."""
    start_time: float = 0.0
    """The clock at the start of an episode: the clip time whose pose is closest to the scene's starting pose."""
    in_place: bool = False
    """Whether the expert sees its clip where the clip has it, not re-anchored to the robot (`clip_in_place`)."""
    steerable: bool = False
    """Whether its clip travels (walk, run, crawl): re-anchored, it is turned towards the scene's steering point."""
    anchored: bool = False
    """Whether it trained with its clip anchored once (`TrackingConfig.home_anchor` "once"): where the scene names
    an anchor (`Subgoal.anchor`) it sees its clip there, as in training, not re-anchored onto the robot."""
    action_gain: float = 1.0
    """The expert's action in the scene's action units: its own action scale over the scene's (the largest of
    the experts'). Servo target = home + action · scale, so gain · action is the same target under the scene's
    map, and a weighted sum of scaled actions is the weighted sum of the experts' targets."""

    @property
    def objective(self):
        return self.tracking.objective

    def reset_info(self, rng) -> dict:
        """The objective's own task variables (e.g. walk's target speed), when it reads the scene with its own."""
        return dict(self.objective.reset_info(rng)) if self.objective_source == "scene" else {}

    def features(self, view, info, clip_time, objective_info, turn=0.0, anchor=None):
        """[n] everything after proprioception in the expert's observation; `turn` and `anchor` as `reference`'s."""
        return jnp.concatenate([self.reference(view, clip_time, turn, anchor),
                                self.objective_features(view, info, objective_info)])

    def reference(self, view, clip_time, turn=0.0, anchor=None):
        """[2 + n_future·(26 + 3K)] the phase and the clip's future frames at `clip_time`, as this expert sees them;
        a steerable expert's clip turned by `turn` (rad) about the robot; an anchored one's at `anchor` (ground pose
        [3], active) where active."""
        return reference_features(self.tracking, view, clip_time, self.clip, self.in_place,
                                  turn if self.steerable else 0.0, anchor if self.anchored else None, self.start_time)

    def objective_features(self, view, info, objective_info):
        """[k] the objective's features (k = 0 without one); `info` is the scene's, `objective_info` the expert's own."""
        if self.objective_source == "scene":
            return self.objective.features(view, {**info, **objective_info})
        if self.objective_source == "shared":
            return self.objective.features(view, info)
        if self.objective_source == "frozen":
            return jnp.asarray(self.frozen_objective, jnp.float32)
        return jnp.zeros(0, jnp.float32)


def objects_present(model, task) -> bool:
    """Whether compiled `model` holds every body, site and joint `task` reads."""
    import mujoco

    kinds = ((mujoco.mjtObj.mjOBJ_BODY, task.bodies), (mujoco.mjtObj.mjOBJ_SITE, task.sites),
             (mujoco.mjtObj.mjOBJ_JOINT, task.joints))
    return all(mujoco.mj_name2id(model, kind, name) >= 0 for kind, names in kinds for name in names)


def clip_in_place(model, tracking, start_time: float, start_root, tolerance: float = 0.02) -> bool:
    """Whether `tracking`'s clip belongs in place in compiled scene `model`: it plays in place (it moves props, or
    starts on one where another clip leaves the robot: `TrackingConfig.plays_in_place`), every prop
    of the expert's own training scene stands at the same place in `model`, and the robot's starting root
    (`start_root` [3]: the task's `Task.start_root`, which is not always the home keyframe's) is within `tolerance`
    (m, horizontally) of the clip's root at `start_time`."""
    import mujoco
    import numpy as np

    from metaworld_x.robot.parts import robot_bodies

    if not tracking.config.plays_in_place:  # nothing to be in place with
        return False
    own = tracking.build_model()
    if np.linalg.norm(np.asarray(start_root)[:2] - np.asarray(frame_at(tracking.reference, 0, start_time).root_pos)[:2]) > tolerance:
        return False
    own_data, scene_data = mujoco.MjData(own), mujoco.MjData(model)
    mujoco.mj_kinematics(own, own_data)
    mujoco.mj_kinematics(model, scene_data)
    robot = robot_bodies(own)
    for body in range(1, own.nbody):
        if robot[body]:
            continue
        there = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, own.body(body).name)
        if there < 0 or np.linalg.norm(own_data.xpos[body] - scene_data.xpos[there]) > tolerance:
            return False
    return True


def check_layout(name: str, layout, observation_size: int) -> list[list]:
    """The layout, or a UserError when its parts do not add up to the policy's input size."""
    total = sum(int(size) for _, size in layout)
    if total != observation_size:
        raise UserError(
            f"expert {name!r}: its observation layout adds up to {total} entries but its policy reads {observation_size};"
            " the expert was trained on a different observation than its spec builds now. Retrain it or restore its spec"
        )
    return [[str(part), int(size)] for part, size in layout]


def steering_turn(view, point, active, max_turn: float):
    """The turn (rad, in [-max_turn, max_turn]) from the robot's heading towards world `point` [2]; 0 unless
    `active`. A locomotion expert follows its re-anchored clip's heading, so turning the clip steers it there."""
    to_point = point[:2] - view.root_pos[:2]
    error = jnp.arctan2(to_point[1], to_point[0]) - yaw(view.root_quat)
    error = jnp.arctan2(jnp.sin(error), jnp.cos(error))
    return jnp.where(active, jnp.clip(error, -max_turn, max_turn), 0.0)
