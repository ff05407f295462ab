"""Clips made straight from robot poses, for tests that need a clip with a known property (a loop, a far start, a
joint past its range): keypoints by forward kinematics, velocities by differences, no retargeting."""

import numpy as np

from metaworld_x.motion.clip import Clip
from metaworld_x.motion.ik import home_qpos, joint_qpos_indices
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS
from metaworld_x.motion.retarget import PoseKinematics
from metaworld_x.motion.scaling import KEYPOINT_NAMES, ROBOT_FRAMES
from metaworld_x.robot import HOME_ROOT_HEIGHT, JOINT_NAMES, robot_spec
from metaworld_x.robot.fingerprint import robot_hash

FPS = 50.0
_MODEL = robot_spec("h1").compile()


def home_joints() -> np.ndarray:
    """[19] the home pose's joint angles."""
    return home_qpos(_MODEL)[joint_qpos_indices(_MODEL)].copy()


def joint(name: str) -> int:
    return JOINT_NAMES.index(name)


def poses(seconds: float, fps: float = FPS) -> tuple[np.ndarray, np.ndarray]:
    """([T] times, [T, 19] the home pose at every frame) of a clip `seconds` long."""
    times = np.arange(int(round(seconds * fps)) + 1) / fps
    return times, np.repeat(home_joints()[None], len(times), axis=0)


def clip_from_poses(joint_pos: np.ndarray, root_pos: np.ndarray | None = None, root_quat: np.ndarray | None = None,
                    skill: str = "test", fps: float = FPS) -> Clip:
    """A clip of the robot in poses `joint_pos` [T, 19], its pelvis at `root_pos` [T, 3] (default: standing at the
    origin at the home height) turned by `root_quat` [T, 4] (default: facing +x)."""
    count = len(joint_pos)
    if root_pos is None:
        root_pos = np.tile([0.0, 0.0, HOME_ROOT_HEIGHT], (count, 1))
    if root_quat is None:
        root_quat = np.tile([1.0, 0.0, 0.0, 0.0], (count, 1))
    qpos = np.repeat(home_qpos(_MODEL)[None], count, axis=0)
    qpos[:, :3], qpos[:, 3:7] = root_pos, root_quat
    qpos[:, joint_qpos_indices(_MODEL)] = joint_pos
    kinematics = PoseKinematics(_MODEL)
    keypoints = kinematics.keypoints(qpos)
    lowest, _, _ = kinematics.floor_view(qpos)
    angular = _angular_velocity(root_quat, fps)
    return Clip(
        skill=skill, fps=fps, root_pos=root_pos, root_quat=root_quat, joint_pos=joint_pos,
        joint_vel=np.gradient(joint_pos, 1 / fps, axis=0), root_lin_vel=np.gradient(root_pos, 1 / fps, axis=0),
        root_ang_vel=angular, keypoint_pos=keypoints, target_pos=keypoints,
        human_pos=np.zeros((count, len(CANONICAL_KEYPOINTS), 3)), contacts=np.ones((count, 2), bool),
        keypoint_names=tuple(ROBOT_FRAMES[key][1] for key in KEYPOINT_NAMES), human_names=CANONICAL_KEYPOINTS,
        source="keyframed", source_file="", licence="", attribution="", robot_hash=robot_hash(_MODEL),
        quality={"keypoint_error_mean": 0.0, "keypoint_error_max": 0.0, "penetration": float(max(0.0, -lowest.min())),
                 "skating": 0.0, "limit_violations": 0, "speed": 0.0},
        info={"loop": False},
    )


def _angular_velocity(quat: np.ndarray, fps: float) -> np.ndarray:
    """[T, 3] body-frame angular velocity of orientations `quat` [T, 4] (w, x, y, z), by central differences."""
    from scipy.spatial.transform import Rotation

    rotations = Rotation.from_quat(quat, scalar_first=True)
    after, before = np.minimum(np.arange(len(quat)) + 1, len(quat) - 1), np.maximum(np.arange(len(quat)) - 1, 0)
    span = np.maximum(after - before, 1) / fps
    return (rotations[before].inv() * rotations[after]).as_rotvec() / span[:, None]
