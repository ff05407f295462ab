"""Human keypoints -> targets in the robot's proportions.

The human and the H1 differ in size and in proportions (the H1's hips are
wider, its trunk rigid from pelvis to shoulders). Positions are therefore
not scaled point by point. The root is: the hip centre is scaled by the leg
length ratio, so the root trajectory and the stride carry over. Every limb
then keeps the human's bone *directions* with the robot's bone *lengths*,
hung from the robot's own hips and shoulders, so each target is one the
robot can reach up to its joint limits and missing degrees of freedom.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS

SIDES = ("left", "right")
# Human keypoint -> the robot frame (kind, name) that stands for it. `toe`
# stands for the sole (the foot site); the foot's direction comes from the
# human's ankle -> toe vector. The neck has no robot counterpart.
ROBOT_FRAMES: dict[str, tuple[str, str]] = {
    "pelvis": ("body", "pelvis"),
    "chest": ("body", "torso_link"),
    "head": ("site", "head"),
    **{
        f"{side}_{part}": (kind, f"{side}_{name}")
        for side in SIDES
        for part, kind, name in (
            ("hip", "body", "hip_pitch_link"),
            ("knee", "body", "knee_link"),
            ("ankle", "body", "ankle_link"),
            ("toe", "site", "foot"),
            ("shoulder", "body", "shoulder_roll_link"),
            ("elbow", "body", "elbow_link"),
            ("wrist", "site", "hand"),
        )
    },
}
KEYPOINT_NAMES: tuple[str, ...] = tuple(ROBOT_FRAMES)
# The limbs' end points, on which keypoint error is reported.
END_POINTS: tuple[str, ...] = ("left_ankle", "right_ankle", "left_wrist", "right_wrist")


def frame_position(model: mujoco.MjModel, data: mujoco.MjData, kind: str, name: str) -> np.ndarray:
    """[3] world position of a body or site after forward kinematics."""
    if kind == "body":
        return data.body(name).xpos.copy()
    return data.site(name).xpos.copy()


@dataclass(frozen=True)
class RobotProportions:
    """Lengths and offsets of the robot in its zero pose (pelvis at the origin, upright).

    Attributes:
      offsets: {keypoint: [3] position relative to the hip centre, pelvis frame},
        for the trunk keypoints (pelvis, chest, head, hips, shoulders).
      thigh, shin: hip pitch axis -> knee -> ankle, metres.
      upper_arm, forearm: shoulder -> elbow -> hand site, metres.
      sole: [3] foot site in the ankle frame (the sole's centre).
    """

    offsets: dict[str, np.ndarray]
    thigh: float
    shin: float
    upper_arm: float
    forearm: float
    sole: np.ndarray

    @property
    def leg(self) -> float:
        return self.thigh + self.shin

    @classmethod
    def of(cls, model: mujoco.MjModel) -> RobotProportions:
        data = mujoco.MjData(model)
        data.qpos[:] = model.qpos0
        data.qpos[:3] = 0.0
        data.qpos[3:7] = (1.0, 0.0, 0.0, 0.0)
        mujoco.mj_kinematics(model, data)
        at = {key: frame_position(model, data, *frame) for key, frame in ROBOT_FRAMES.items()}
        hip_centre = 0.5 * (at["left_hip"] + at["right_hip"])
        trunk = ("pelvis", "chest", "head", "left_hip", "right_hip", "left_shoulder", "right_shoulder")
        ankle = data.body("left_ankle_link")
        sole = ankle.xmat.reshape(3, 3).T @ (at["left_toe"] - ankle.xpos)
        length = lambda a, b: float(np.mean([np.linalg.norm(at[f"{s}_{a}"] - at[f"{s}_{b}"]) for s in SIDES]))
        return cls(
            offsets={key: at[key] - hip_centre for key in trunk},
            thigh=length("hip", "knee"),
            shin=length("knee", "ankle"),
            upper_arm=length("shoulder", "elbow"),
            forearm=length("elbow", "wrist"),
            sole=sole,
        )


@dataclass(frozen=True)
class ScaledTargets:
    """IK targets for one clip in the robot's proportions.

    Attributes:
      positions: {keypoint: [T, 3]} target positions (KEYPOINT_NAMES).
      pelvis_rot, torso_rot: [T, 3, 3] target orientations of the pelvis and torso.
      foot_rot: {side: [T, 3, 3]} target orientation of each ankle link.
      human: {canonical keypoint: [T, 3]} the human's keypoints scaled
        uniformly (what `motion show` draws beside the robot).
      scale: robot leg length / human leg length.
      hand_facing: {side: [T, 3]} the direction each forearm's y axis should lie along, weighted by its length
        (`ik.FrameTargets.hand_facing`), or None: the forearms' roll is free.
    """

    positions: dict[str, np.ndarray]
    pelvis_rot: np.ndarray
    torso_rot: np.ndarray
    foot_rot: dict[str, np.ndarray]
    human: dict[str, np.ndarray]
    scale: float
    hand_facing: dict[str, np.ndarray] | None = None

    @classmethod
    def of_robot(cls, positions: dict[str, np.ndarray], pelvis_rot: np.ndarray, torso_rot: np.ndarray,
                 foot_rot: dict[str, np.ndarray]) -> ScaledTargets:
        """Targets made in the robot's own frames (keyframed or blended clips), with no human behind them.

        The robot's keypoints stand in for the human skeleton that `motion show` draws; canonical
        keypoints the robot lacks sit at the shoulders' midpoint.
        """
        shoulders = 0.5 * (positions["left_shoulder"] + positions["right_shoulder"])
        human = {name: positions.get(name, shoulders) for name in CANONICAL_KEYPOINTS}
        return cls(positions={key: positions[key] for key in KEYPOINT_NAMES}, pelvis_rot=pelvis_rot,
                   torso_rot=torso_rot, foot_rot=foot_rot, human=human, scale=1.0)

    @cached_property
    def num_frames(self) -> int:
        return self.pelvis_rot.shape[0]

    def transformed(self, rotation: np.ndarray, translation: np.ndarray) -> ScaledTargets:
        """The same targets in a world moved by x -> rotation @ x + translation."""
        move = lambda p: p @ rotation.T + translation
        turn = lambda r: np.einsum("ij,tjk->tik", rotation, r)
        return ScaledTargets(
            positions={k: move(v) for k, v in self.positions.items()},
            pelvis_rot=turn(self.pelvis_rot),
            torso_rot=turn(self.torso_rot),
            foot_rot={k: turn(v) for k, v in self.foot_rot.items()},
            human={k: move(v) for k, v in self.human.items()},
            scale=self.scale,
            hand_facing=None if self.hand_facing is None else {k: v @ rotation.T for k, v in self.hand_facing.items()},
        )


def unit(v: np.ndarray, axis: int = -1) -> np.ndarray:
    norm = np.linalg.norm(v, axis=axis, keepdims=True)
    return v / np.maximum(norm, 1e-9)


def frame_from_axes(up: np.ndarray, lateral: np.ndarray) -> np.ndarray:
    """[T, 3, 3] rotations whose z is `up` [T, 3] and whose y is `lateral` made orthogonal to it."""
    z = unit(up)
    y = unit(lateral - np.sum(lateral * z, axis=-1, keepdims=True) * z)
    x = np.cross(y, z)
    return np.stack([x, y, z], axis=-1)


def human_leg_length(keypoints: dict[str, np.ndarray]) -> float:
    """Median over frames of hip -> knee -> ankle bone length, mean of both legs (metres)."""
    lengths = [
        np.linalg.norm(keypoints[f"{s}_knee"] - keypoints[f"{s}_hip"], axis=-1)
        + np.linalg.norm(keypoints[f"{s}_ankle"] - keypoints[f"{s}_knee"], axis=-1)
        for s in SIDES
    ]
    return float(np.median(np.concatenate(lengths)))


def scale_to_robot(keypoints: dict[str, np.ndarray], robot: RobotProportions) -> ScaledTargets:
    """Targets in the robot's proportions from canonical human keypoints {name: [T, 3]}."""
    leg = human_leg_length(keypoints)
    if not 0.3 < leg < 1.5:
        raise UserError(f"the human's legs measure {leg:.2f} m (hip to ankle); expected a human in metres")
    scale = robot.leg / leg
    k = keypoints
    hip_centre = 0.5 * (k["left_hip"] + k["right_hip"])
    shoulder_centre = 0.5 * (k["left_shoulder"] + k["right_shoulder"])
    # The H1's trunk is rigid from pelvis to shoulders: its pitch and roll
    # follow the human's hip -> shoulder line, its yaw the hips (pelvis) or
    # the shoulders (torso, the one waist joint).
    up = shoulder_centre - hip_centre
    pelvis_rot = frame_from_axes(up, k["left_hip"] - k["right_hip"])
    torso_rot = frame_from_axes(up, k["left_shoulder"] - k["right_shoulder"])
    root = scale * hip_centre
    trunk = lambda key, rot: root + np.einsum("tij,j->ti", rot, robot.offsets[key])

    positions = {
        "pelvis": trunk("pelvis", pelvis_rot),
        "chest": trunk("chest", torso_rot),
        "head": trunk("head", torso_rot),
    }
    foot_rot = {}
    for side in SIDES:
        hip = trunk(f"{side}_hip", pelvis_rot)
        knee = hip + robot.thigh * unit(k[f"{side}_knee"] - k[f"{side}_hip"])
        ankle = knee + robot.shin * unit(k[f"{side}_ankle"] - k[f"{side}_knee"])
        foot_rot[side] = _foot_rotation(k[f"{side}_ankle"], k[f"{side}_toe"], pelvis_rot)
        shoulder = trunk(f"{side}_shoulder", torso_rot)
        elbow = shoulder + robot.upper_arm * unit(k[f"{side}_elbow"] - k[f"{side}_shoulder"])
        wrist = elbow + robot.forearm * unit(k[f"{side}_wrist"] - k[f"{side}_elbow"])
        positions.update({
            f"{side}_hip": hip, f"{side}_knee": knee, f"{side}_ankle": ankle,
            f"{side}_toe": ankle + np.einsum("tij,j->ti", foot_rot[side], robot.sole),
            f"{side}_shoulder": shoulder, f"{side}_elbow": elbow, f"{side}_wrist": wrist,
        })
    return ScaledTargets(
        positions={key: positions[key] for key in KEYPOINT_NAMES},
        pelvis_rot=pelvis_rot,
        torso_rot=torso_rot,
        foot_rot=foot_rot,
        human={key: scale * value for key, value in keypoints.items()},
        scale=scale,
    )


def _foot_rotation(ankle: np.ndarray, toe: np.ndarray, pelvis_rot: np.ndarray) -> np.ndarray:
    """[T, 3, 3] ankle-link orientation: the human foot's direction, its rest pitch removed.

    A human's ankle -> toe line points down by some angle when the foot is
    flat (ankle joint above the ball of the foot); the robot's ankle frame is
    level then. That rest angle is measured on the frames where the toe is
    lowest, i.e. where the foot is most likely flat on the ground.
    """
    forward = unit(toe - ankle)
    raw = frame_from_axes(np.cross(forward, pelvis_rot[:, :, 1]), pelvis_rot[:, :, 1])
    pitch = np.arctan2(-forward[:, 2], np.linalg.norm(forward[:, :2], axis=-1))
    flat = toe[:, 2] <= np.min(toe[:, 2]) + 0.02
    rest = float(np.median(pitch[flat]))
    c, s = np.cos(-rest), np.sin(-rest)
    undo_rest = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return raw @ undo_rest
