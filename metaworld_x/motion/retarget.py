"""Retarget human motion to the H1: scale, inverse kinematics, feet on the floor.

Pipeline (`retarget`):
1. trim and resample the human clip to the control rate (50 Hz);
2. canonical keypoints -> targets in the robot's proportions (`scaling`),
   turned and moved so the clip starts at the origin facing +x;
3. first IK pass (`ik.PoseSolver`, warm-started frame to frame);
4. the floor: one height offset for the clip (most frames have a foot or a
   knee on the floor), then stance detection on the robot's feet and each
   stance pinned to one place (`contacts`);
5. second IK pass with the pinned feet;
6. per-frame root lift so no geom is below the floor and a standing foot
   touches it, smoothed;
7. velocities by Savitzky-Golay differentiation, keypoints by forward
   kinematics, quality figures (`quality`) -> a `Clip`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np
from scipy.ndimage import gaussian_filter1d
from scipy.signal import savgol_filter
from scipy.spatial.transform import Rotation

from metaworld_x.errors import UserError
from metaworld_x.motion.clip import Clip
from metaworld_x.motion.contacts import ContactConfig, detect_contacts, geom_lowest_z, pin_feet
from metaworld_x.motion.human import HumanMotion
from metaworld_x.motion.ik import FrameTargets, IkConfig, PoseSolver, joint_qpos_indices, standing_weight
from metaworld_x.motion.keypoints import CANONICAL_KEYPOINTS, canonical_keypoints
from metaworld_x.motion.quality import measure
from metaworld_x.motion.scaling import (
    KEYPOINT_NAMES,
    ROBOT_FRAMES,
    SIDES,
    RobotProportions,
    ScaledTargets,
    frame_position,
    scale_to_robot,
)
from metaworld_x.robot.fingerprint import robot_hash
from metaworld_x.robot.parts import robot_geoms

CONTROL_FPS = 50.0
# An object counts as fully lifted this far above its resting height (m).
_LIFT_BLEND_M = 0.05


@dataclass(frozen=True)
class RetargetConfig:
    """Settings of the retargeting pipeline."""

    fps: float = CONTROL_FPS
    """Output frame rate; the human clip is resampled to it first."""
    ik: IkConfig = field(default_factory=IkConfig)
    """Weights, limits and iterations of the per-frame IK."""
    contacts: ContactConfig = field(default_factory=ContactConfig)
    """Stance detection and foot pinning."""
    align_start: bool = True
    """Move and turn the clip so it starts at the origin facing +x."""
    floor_percentile: float | None = 10.0
    """The clip's floor height is this percentile of the robot's per-frame lowest point (first pass); None: the
    targets' z = 0 is the floor already (poses made on this robot), and only the per-frame lift keeps geoms out."""
    lift_smoothing: float = 1.5
    """Gaussian sigma (frames) of the per-frame root lift."""
    velocity_window: int = 7
    """Savitzky-Golay window (frames, odd) for the velocities."""

    def __post_init__(self) -> None:
        if not self.fps > 0:
            raise UserError(f"the output fps must be positive, got {self.fps}")
        if self.velocity_window < 3 or self.velocity_window % 2 == 0:
            raise UserError(f"velocity_window must be an odd number >= 3, got {self.velocity_window}")


@dataclass(frozen=True)
class SourceInfo:
    """Where a clip comes from, stored in its metadata."""

    kind: str = "mocap"
    """'mocap' or 'keyframed'."""
    file: str = ""
    """The source file's name."""
    licence: str = ""
    """The source's licence, one line."""
    attribution: str = ""
    """The credit the licence asks for."""


def retarget(
    motion: HumanMotion,
    skill: str,
    *,
    model: mujoco.MjModel | None = None,
    config: RetargetConfig = RetargetConfig(),
    source: SourceInfo | None = None,
    start: float = 0.0,
    end: float | None = None,
    progress: bool = False,
    playback_rate: float = 1.0,
) -> Clip:
    """Retarget `motion` (the segment [start, end] s) onto the robot as the reference clip of `skill`.

    Args:
      motion: a loaded human clip (`load_human_motion`).
      skill: the skill label stored in the clip.
      model: the robot model; our H1 by default.
      config: pipeline settings.
      source: provenance; by default the motion's file name, licence unknown.
      start, end: the segment in seconds (end None: to the end of the clip).
      progress: show progress bars.
      playback_rate: play the segment this many times as fast (1.3: the same
        strides at 1.3 times the cadence and speed), for a task that asks for
        more speed than the person moved at.
    """
    model = _default_model() if model is None else model
    clock = time.process_time()
    # A cyclic source (DeepMimic's "wrap") stays cyclic only when kept whole.
    loop = motion.metadata.get("loop") == "wrap" and start <= 0.0 and (end is None or end >= motion.duration)
    if start > 0.0 or end is not None:
        motion = motion.trim(start, end)
    segment = [float(start), float(start + motion.duration)]  # source seconds
    source_fps = float(motion.metadata.get("resampled_from_fps", motion.fps))
    if playback_rate != 1.0:
        motion = motion.played_at(playback_rate)
    motion = motion.resample(config.fps)
    if motion.num_frames < 2:
        raise UserError(f"{motion.source}: the segment holds fewer than 2 frames at {config.fps} fps")
    targets = scale_to_robot(canonical_keypoints(motion), RobotProportions.of(model))
    object_pose = None if motion.object_pose is None else _scaled_pose(motion.object_pose, targets.scale)
    if config.align_start:
        rotation, translation = start_alignment(targets)
        targets = targets.transformed(rotation, translation)
        object_pose = None if object_pose is None else _moved_pose(object_pose, rotation, translation)
    source = source or SourceInfo(file=_file_name(motion.source))
    info = {
        "segment_s": segment,
        "source_fps": source_fps,
        "playback_rate": float(playback_rate),
        "scale": targets.scale,
        "object_scale": targets.scale if object_pose is not None else None,
        "source_format": motion.metadata.get("format", ""),
        "loop": bool(loop),
    }
    return solve_clip(
        targets, skill, model=model, config=config, source=source, info=info,
        object_pose=object_pose, progress=progress, clock=clock,
    )


def solve_clip(
    targets: ScaledTargets,
    skill: str,
    *,
    model: mujoco.MjModel,
    config: RetargetConfig,
    source: SourceInfo,
    info: dict | None = None,
    object_pose: np.ndarray | None = None,
    progress: bool = False,
    clock: float | None = None,
) -> Clip:
    """Steps 3-7 of the pipeline on targets already in the robot's proportions and world."""
    # CPU time of this process: on a shared machine wall time measures the neighbours.
    clock = time.process_time() if clock is None else clock
    robot = RobotProportions.of(model)
    kinematics = PoseKinematics(model)
    solver = PoseSolver(model, config.ik, config.fps)

    first = _solve_pass(solver, targets, None, progress, f"{skill}: IK pass 1")
    lowest, _, _ = kinematics.floor_view(first)
    floor = 0.0 if config.floor_percentile is None else float(np.percentile(lowest, config.floor_percentile))
    targets = targets.transformed(np.eye(3), np.array([0.0, 0.0, -floor]))
    first[:, 2] -= floor
    object_pose = None if object_pose is None else _moved_pose(object_pose, np.eye(3), np.array([0.0, 0.0, -floor]))

    _, foot_lowest, soles = kinematics.floor_view(first)
    contacts = detect_contacts(foot_lowest, soles, config.fps, config.contacts)
    ankles, ankle_rots = kinematics.ankles(first)
    pinned_pos, pinned_rot, weights = pin_feet(ankles, ankle_rots, contacts, robot.sole, config.contacts)
    pinned = replace(
        targets,
        positions={**targets.positions, **{f"{s}_ankle": pinned_pos[s] for s in SIDES}},
        foot_rot=pinned_rot,
    )
    solver.reset(first[0], iterations=config.ik.first_iterations // 4)
    qpos = _solve_pass(solver, pinned, weights, progress, f"{skill}: IK pass 2")

    lowest, foot_lowest, _ = kinematics.floor_view(qpos)
    qpos[:, 2] += _root_lift(lowest, foot_lowest, contacts, config.lift_smoothing)
    qpos[:, 3:7] = _one_hemisphere(qpos[:, 3:7])
    elapsed = max(time.process_time() - clock, 1e-9)

    lowest, _, soles = kinematics.floor_view(qpos)
    keypoints = kinematics.keypoints(qpos)
    target_pos = np.stack([targets.positions[key] for key in KEYPOINT_NAMES], axis=1)
    joints = qpos[:, joint_qpos_indices(model)]
    quality = measure(model, joints, keypoints, target_pos, lowest, soles, contacts, config.fps,
                      speed=len(qpos) / elapsed)
    velocities = _velocities(qpos, joints, config.fps, config.velocity_window)
    if object_pose is not None:
        object_pose = _follow_hands(object_pose, keypoints, targets.human)
    return Clip(
        skill=skill,
        fps=config.fps,
        root_pos=qpos[:, :3],
        root_quat=qpos[:, 3:7],
        joint_pos=joints,
        **velocities,
        keypoint_pos=keypoints,
        target_pos=target_pos,
        human_pos=np.stack([targets.human[key] for key in CANONICAL_KEYPOINTS], axis=1),
        contacts=contacts,
        keypoint_names=tuple(ROBOT_FRAMES[key][1] for key in KEYPOINT_NAMES),
        human_names=CANONICAL_KEYPOINTS,
        source=source.kind,
        source_file=source.file,
        licence=source.licence,
        attribution=source.attribution,
        robot_hash=robot_hash(model),
        quality=quality.as_dict(),
        info={**(info or {}), "floor_offset": -floor, "ik_iterations": config.ik.iterations,
              "soft_pin_frames": solver.fallbacks},
        object_pose=object_pose,
    )


def start_alignment(targets: ScaledTargets) -> tuple[np.ndarray, np.ndarray]:
    """(rotation [3, 3], translation [3]) putting the first frame's pelvis over the origin, facing +x."""
    heading = targets.pelvis_rot[0][:, 0]
    yaw = np.arctan2(heading[1], heading[0])
    c, s = np.cos(-yaw), np.sin(-yaw)
    rotation = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    origin = rotation @ targets.positions["pelvis"][0]
    return rotation, np.array([-origin[0], -origin[1], 0.0])


def _solve_pass(solver: PoseSolver, targets: ScaledTargets, pinned: np.ndarray | None, progress: bool, label: str) -> np.ndarray:
    from tqdm import tqdm

    frames = []
    standing = None if pinned is None else standing_weight(pinned, solver.config.balance_smoothing_s / solver.dt)
    for t in tqdm(range(targets.num_frames), desc=label, disable=not progress, leave=False):
        frames.append(solver.solve(FrameTargets(
            positions={key: value[t] for key, value in targets.positions.items()},
            pelvis_rot=targets.pelvis_rot[t],
            torso_rot=targets.torso_rot[t],
            foot_rot={side: value[t] for side, value in targets.foot_rot.items()},
            pinned=(0.0, 0.0) if pinned is None else (float(pinned[t, 0]), float(pinned[t, 1])),
            balance=None if standing is None else float(standing[t]),
            hand_facing=None if targets.hand_facing is None else {s: v[t] for s, v in targets.hand_facing.items()},
        )))
    return np.array(frames)


def _root_lift(lowest: np.ndarray, foot_lowest: np.ndarray, contacts: np.ndarray, sigma: float) -> np.ndarray:
    """[T] root height change: nothing below the floor, a standing foot on it, smooth."""
    lift = np.maximum(0.0, -lowest)
    standing = contacts.any(axis=1)
    stance_foot = np.where(contacts, foot_lowest, np.inf).min(axis=1)
    lift[standing] = -stance_foot[standing]
    lift = np.maximum(lift, -lowest)
    if sigma > 0 and len(lift) > 1:
        lift = gaussian_filter1d(lift, sigma, mode="nearest")
    return np.maximum(lift, -lowest)


def _one_hemisphere(quats: np.ndarray) -> np.ndarray:
    """[T, 4] the same rotations with each quaternion's sign chosen to follow the previous one."""
    quats = quats.copy()
    for t in range(1, len(quats)):
        if quats[t] @ quats[t - 1] < 0.0:
            quats[t] = -quats[t]
    return quats


def _velocities(qpos: np.ndarray, joints: np.ndarray, fps: float, window: int) -> dict[str, np.ndarray]:
    """Joint and root velocities by smoothed differentiation (MuJoCo's qvel conventions)."""
    count = len(qpos)
    window = min(window, count if count % 2 else count - 1)
    dt = 1.0 / fps
    if window >= 3:
        derivative = lambda x: savgol_filter(x, window, min(2, window - 1), deriv=1, delta=dt, axis=0, mode="interp")
    else:
        derivative = lambda x: np.gradient(x, dt, axis=0)
    rotations = Rotation.from_quat(qpos[:, 3:7], scalar_first=True)
    after = np.minimum(np.arange(count) + 1, count - 1)
    before = np.maximum(np.arange(count) - 1, 0)
    span = (after - before) * dt
    world = (rotations[after] * rotations[before].inv()).as_rotvec() / span[:, None]
    if count > 2:
        world = gaussian_filter1d(world, 1.0, axis=0, mode="nearest")
    return {
        "joint_vel": derivative(joints),
        "root_lin_vel": derivative(qpos[:, :3]),
        "root_ang_vel": rotations.inv().apply(world),
    }


class PoseKinematics:
    """Forward kinematics of a pose sequence: keypoints, ankles and the floor view."""

    def __init__(self, model: mujoco.MjModel):
        self.model = model
        self.data = mujoco.MjData(model)
        self.geoms = robot_geoms(model)
        self.feet = [model.geom(f"{side}_foot").id for side in SIDES]
        self.foot_index = [int(np.flatnonzero(self.geoms == foot)[0]) for foot in self.feet]

    def _each(self, qpos: np.ndarray):
        for q in qpos:
            self.data.qpos[:] = q
            mujoco.mj_kinematics(self.model, self.data)
            yield self.data

    def floor_view(self, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """[T] lowest robot point, [T, 2] lowest point of each foot, [T, 2, 3] sole centres."""
        xpos, xmat, soles = [], [], []
        sites = [self.model.site(f"{side}_foot").id for side in SIDES]
        for data in self._each(qpos):
            xpos.append(data.geom_xpos[self.geoms])
            xmat.append(data.geom_xmat[self.geoms])
            soles.append(data.site_xpos[sites])
        z = geom_lowest_z(self.model, self.geoms, np.array(xpos), np.array(xmat))
        return z.min(axis=1), z[:, self.foot_index], np.array(soles)

    def ankles(self, qpos: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """{side: [T, 3]} ankle positions and {side: [T, 3, 3]} orientations."""
        pos = {side: [] for side in SIDES}
        for data in self._each(qpos):
            for side in SIDES:
                pos[side].append(data.body(f"{side}_ankle_link").xpos.copy())
        rot = self.orientations(qpos, [f"{side}_ankle_link" for side in SIDES])
        return ({s: np.array(v) for s, v in pos.items()}, {s: rot[f"{s}_ankle_link"] for s in SIDES})

    def orientations(self, qpos: np.ndarray, bodies) -> dict[str, np.ndarray]:
        """{body: [T, 3, 3]} world orientations of `bodies`."""
        rot = {body: [] for body in bodies}
        for data in self._each(qpos):
            for body in bodies:
                rot[body].append(data.body(body).xmat.reshape(3, 3).copy())
        return {body: np.array(r) for body, r in rot.items()}

    def keypoints(self, qpos: np.ndarray) -> np.ndarray:
        """[T, K, 3] world positions of the robot frames of KEYPOINT_NAMES."""
        return np.array([
            [frame_position(self.model, data, *ROBOT_FRAMES[key]) for key in KEYPOINT_NAMES]
            for data in self._each(qpos)
        ])


def _follow_hands(pose: np.ndarray, keypoints: np.ndarray, human: dict[str, np.ndarray]) -> np.ndarray:
    """[T, 7] the object moved by the difference between the robot's and the scaled human's hands while lifted.

    Scaling the whole human keeps the object where the scaled human holds
    it, but the robot's arms differ, so its hands are elsewhere. On the floor
    the object stays put; lifted, it moves with the robot's hands. The blend
    follows the object's height above its lowest (resting) height.
    """
    hands = [KEYPOINT_NAMES.index(f"{side}_wrist") for side in SIDES]
    robot_mid = keypoints[:, hands].mean(axis=1)
    human_mid = 0.5 * (human["left_wrist"] + human["right_wrist"])
    lifted = np.clip((pose[:, 6] - pose[:, 6].min()) / _LIFT_BLEND_M, 0.0, 1.0)[:, None]
    moved = pose.copy()
    moved[:, 4:] += lifted * (robot_mid - human_mid)
    return moved


def _scaled_pose(pose: np.ndarray, scale: float) -> np.ndarray:
    return np.concatenate([pose[:, :4], pose[:, 4:] * scale], axis=-1)


def _moved_pose(pose: np.ndarray, rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    quat = (Rotation.from_matrix(rotation) * Rotation.from_quat(pose[:, :4], scalar_first=True)).as_quat(scalar_first=True)
    return np.concatenate([quat, pose[:, 4:] @ rotation.T + translation], axis=-1)


def _file_name(source: str) -> str:
    from pathlib import Path

    return Path(source).name


def _default_model() -> mujoco.MjModel:
    from metaworld_x.robot import robot_spec

    return robot_spec("h1").compile()
