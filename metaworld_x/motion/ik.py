"""Frame-by-frame inverse kinematics of the H1 on keypoint targets, with mink.

One `PoseSolver` holds the mink tasks and limits for a model and is reused
over a whole clip: each frame starts from the previous frame's solution
(warm start), so a few QP iterations per frame suffice.

A stance foot is held by a hard constraint, not only by a heavy task: the
human sources slide their feet (10-15 cm/s in some clips), and any finite
weight lets the rest of the body's targets drag a pinned foot along. The
constraint (`SolePinTask`, passed to mink as an equality) holds the sole
centre, the `{side}_foot` site whose speed `quality.foot_skating` reports,
and the foot's forward axis (pitch and yaw); the roll stays free because the
H1's ankle only pitches. Where joint or speed limits make it infeasible the
frame falls back to the soft pin and `PoseSolver.fallbacks` counts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mink
import mujoco
import numpy as np
from scipy.ndimage import gaussian_filter1d

from metaworld_x.errors import UserError
from metaworld_x.motion.scaling import KEYPOINT_NAMES, ROBOT_FRAMES, SIDES
from metaworld_x.robot.constants import HOME_JOINT_POSE, JOINT_NAMES

# The first frame's steps last this many frames, so its joints may travel far.
_FIRST_FRAME_STEP = 10.0


@dataclass(frozen=True)
class IkConfig:
    """Weights and limits of the per-frame IK problem."""

    position_costs: dict[str, float] = field(default_factory=lambda: {
        "pelvis": 1.0, "chest": 0.0, "head": 0.0,
        **{f"{s}_{p}": c for s in SIDES for p, c in (
            ("hip", 0.0), ("knee", 0.3), ("ankle", 1.0), ("toe", 0.0),
            ("shoulder", 0.0), ("elbow", 0.3), ("wrist", 1.0))},
    })
    """Position cost per keypoint (KEYPOINT_NAMES); 0 leaves the keypoint untracked."""
    pelvis_height_weight: float = 0.2
    """Fraction of the pelvis position cost on its height: the legs' lengths differ from the human's,
    so the height gives way first when the feet cannot otherwise be met."""
    pelvis_orientation_cost: float = 0.5
    """Orientation cost on the pelvis (the trunk's pitch and roll)."""
    torso_orientation_cost: float = 0.3
    """Orientation cost on the torso link (the waist's yaw)."""
    foot_orientation_cost: float = 0.3
    """Orientation cost on each ankle link."""
    contact_cost: float = 5.0
    """Position and orientation cost on a foot pinned to the ground while in contact (and while blending in and out)."""
    hard_contacts: bool = True
    """Hold a fully pinned foot (pin weight 1) exactly, as an equality constraint of the QP;
    False leaves it to `contact_cost` alone."""
    posture_cost: float = 0.02
    """Pull towards the home pose, which also picks one of several equal solutions."""
    hand_facing_cost: float = 0.0
    """Cost on each forearm's y axis (a paddle hand's face normal) lying along the frame's `hand_facing` direction,
    where the targets give one (0: off). The H1's arm has four joints: the hand's place leaves the forearm's roll
    free, so nothing else keeps a paddle flat on a box's face."""
    balance_cost: float = 0.0
    """Cost on the centre of mass's horizontal distance from the soles' midpoint while both feet stand (0: off).
    The keypoints alone can ask for a pose the robot cannot stand in: where its arms are shorter than the
    person's, reaching the hands' targets low and far ahead moved pickup_carry's pelvis 0.33 m ahead of the
    person's, the centre of mass 0.3 m past the toes."""
    balance_smoothing_s: float = 0.0
    """Gaussian sigma (s) over which a pass's balance weight follows its double support (`standing_weight`; 0:
    the pin weights as they are). Switched with each step's double support, the pull comes and goes within the 3
    frames of a pin's blend, and the pose it held jumps back toward the other targets: pickup_carry_start's
    pelvis moves up to 15.6 cm in one frame as a foot lifts; smoothed over 0.25 s, 5.5 cm at most."""
    damping: float = 1e-3
    """Levenberg-Marquardt damping of the QP."""
    iterations: int = 2
    """QP iterations per frame after the first (warm-started from the previous frame)."""
    first_iterations: int = 60
    """QP iterations for the first frame, from the home pose."""
    max_joint_speed: float = 20.0
    """Joint speed bound (rad/s) for mink's VelocityLimit."""
    solver: str = "daqp"
    """qpsolvers backend."""

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.first_iterations < 1:
            raise UserError(
                f"IK iterations must be >= 1 (got iterations={self.iterations}, "
                f"first_iterations={self.first_iterations}); 2 per frame is enough with warm starts"
            )
        unknown = sorted(set(self.position_costs) - set(KEYPOINT_NAMES))
        if unknown:
            raise UserError(f"position_costs names unknown keypoints {unknown}; known: {', '.join(KEYPOINT_NAMES)}")


@dataclass(frozen=True)
class FrameTargets:
    """Targets for one frame: positions {keypoint: [3]}, orientations [3, 3], and how pinned each foot is.

    `pinned` (left, right) in [0, 1] blends each foot's costs from tracking
    to `contact_cost`; a step change would make the whole pose jump. A foot
    pinned with weight 1 is in stance and, with `IkConfig.hard_contacts`,
    held exactly at its ankle target's sole point and forward axis.
    """

    positions: dict[str, np.ndarray]
    pelvis_rot: np.ndarray
    torso_rot: np.ndarray
    foot_rot: dict[str, np.ndarray]
    pinned: tuple[float, float] = (0.0, 0.0)
    balance: float | None = None
    """Weight in [0, 1] of `IkConfig.balance_cost` this frame; None: both feet's pin weights' minimum."""
    hand_facing: dict[str, np.ndarray] | None = None
    """{side: [3]} the direction each forearm's y axis should lie along, either way (a paddle's normal across a held
    box); its length, in [0, 1], weighs `IkConfig.hand_facing_cost` (0: free). None: both free."""


def _axis_rows_jacobian(normals: np.ndarray, axis: np.ndarray, jacr: np.ndarray) -> np.ndarray:
    """[k, nv] the Jacobian of `normals @ axis` ([k, 3] @ [3]) for a frame axis turning with angular Jacobian
    `jacr` [3, nv]: d(u . x)/dt = u . (w cross x) = (x cross u) . w, with w = jacr qvel."""
    return normals @ _skew(axis).T @ jacr


class SolePinTask(mink.Task):
    """Holds a foot's sole centre at a point and its forward axis along a direction; the roll stays free.

    Error [5]: the sole site's world position minus its target (3), then the
    site's x axis projected on two unit vectors normal to the target axis (2;
    both 0 when the axes agree). Jacobian [5, nv] from `mj_jacSite`. Used as
    an equality constraint, `J dq = -e` makes the linearised pin exact.
    """

    def __init__(self, model: mujoco.MjModel, site: str, cost: float = 1.0):
        super().__init__(cost=np.full(5, cost), gain=1.0)
        self.model = model
        self.site_id = model.site(site).id
        self.position = np.zeros(3)
        self.normals = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def set_target(self, position: np.ndarray, forward: np.ndarray) -> None:
        """Pin the sole centre at `position` [3] with the foot's x axis along `forward` [3]."""
        forward = np.asarray(forward, dtype=float) / np.linalg.norm(forward)
        side = np.array([-forward[1], forward[0], 0.0])  # z cross forward: horizontal, normal to the foot
        length = np.hypot(side[0], side[1])
        side = np.array([0.0, 1.0, 0.0]) if length < 1e-6 else side / length  # a vertical foot: any will do
        self.position = np.asarray(position, dtype=float).copy()
        self.normals = np.stack([side, _skew(forward) @ side])

    def compute_error(self, configuration: mink.Configuration) -> np.ndarray:
        data = configuration.data
        axis = data.site_xmat[self.site_id].reshape(3, 3)[:, 0]
        return np.concatenate([data.site_xpos[self.site_id] - self.position, self.normals @ axis])

    def compute_jacobian(self, configuration: mink.Configuration) -> np.ndarray:
        data = configuration.data
        mujoco.mj_jacSite(self.model, data, self._jacp, self._jacr, self.site_id)
        axis = data.site_xmat[self.site_id].reshape(3, 3)[:, 0]
        return np.vstack([self._jacp, _axis_rows_jacobian(self.normals, axis, self._jacr)])


class AxisTask(mink.Task):
    """Holds one axis of a body's frame along a direction, either way (a plate's normal across a box).

    Error [2]: the axis projected on two unit vectors normal to the direction
    (both 0 when the axis lies along it, in either sense). Jacobian [2, nv]
    from `mj_jacBody`, as for `SolePinTask`'s axis rows.
    """

    def __init__(self, model: mujoco.MjModel, body: str, axis: int, cost: float = 1.0):
        super().__init__(cost=np.full(2, cost), gain=1.0)
        self.model = model
        self.body_id = model.body(body).id
        self.axis = axis
        self.normals = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def set_target(self, direction: np.ndarray) -> None:
        """Lay the axis along `direction` [3] (any length but 0)."""
        direction = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
        helper = np.array([0.0, 0.0, 1.0]) if abs(direction[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        first = np.cross(helper, direction)
        first /= np.linalg.norm(first)
        self.normals = np.stack([first, np.cross(direction, first)])

    def compute_error(self, configuration: mink.Configuration) -> np.ndarray:
        return self.normals @ configuration.data.xmat[self.body_id].reshape(3, 3)[:, self.axis]

    def compute_jacobian(self, configuration: mink.Configuration) -> np.ndarray:
        data = configuration.data
        mujoco.mj_jacBody(self.model, data, self._jacp, self._jacr, self.body_id)
        axis = data.xmat[self.body_id].reshape(3, 3)[:, self.axis]
        return _axis_rows_jacobian(self.normals, axis, self._jacr)


def standing_weight(pinned: np.ndarray, sigma_frames: float) -> np.ndarray:
    """[T] how much both feet stand, smoothed over time: the pin weights' minimum [T, 2] -> [T], Gaussian-filtered.
    Near 1 in a long double support (a squat), a slow fraction while walking, where double support is short."""
    both = np.asarray(pinned, dtype=float).min(axis=1)
    return gaussian_filter1d(both, sigma_frames, mode="nearest") if sigma_frames > 0 and len(both) > 1 else both


def home_qpos(model: mujoco.MjModel, root_height: float = 1.0) -> np.ndarray:
    """[nq] the home pose standing at the origin."""
    qpos = model.qpos0.copy()
    qpos[:3] = (0.0, 0.0, root_height)
    qpos[3:7] = (1.0, 0.0, 0.0, 0.0)
    for name, angle in HOME_JOINT_POSE.items():
        qpos[model.jnt_qposadr[model.joint(name).id]] = angle
    return qpos


def joint_qpos_indices(model: mujoco.MjModel) -> np.ndarray:
    """[19] qpos index of each joint in JOINT_NAMES order."""
    return np.array([model.jnt_qposadr[model.joint(name).id] for name in JOINT_NAMES])


class PoseSolver:
    """mink IK on the keypoint targets, warm-started from frame to frame."""

    def __init__(self, model: mujoco.MjModel, config: IkConfig = IkConfig(), fps: float = 50.0):
        self.model = model
        self.config = config
        self.dt = 1.0 / fps
        self.configuration = mink.Configuration(model)
        self.configuration.update(home_qpos(model))
        costs = config.position_costs
        self.position_tasks = {
            key: mink.FrameTask(ROBOT_FRAMES[key][1], ROBOT_FRAMES[key][0], position_cost=costs[key], orientation_cost=0.0)
            for key in KEYPOINT_NAMES
            if costs.get(key, 0.0) > 0 and key not in ("pelvis",) and not key.endswith("ankle")
        }
        pelvis_cost = costs["pelvis"] * np.array([1.0, 1.0, config.pelvis_height_weight])
        self.pelvis = mink.FrameTask("pelvis", "body", pelvis_cost, config.pelvis_orientation_cost)
        self.torso = mink.FrameTask("torso_link", "body", 0.0, config.torso_orientation_cost)
        self.feet = {
            side: mink.FrameTask(f"{side}_ankle_link", "body", costs[f"{side}_ankle"], config.foot_orientation_cost)
            for side in SIDES
        }
        self.sole_pins = {side: SolePinTask(model, f"{side}_foot", config.contact_cost) for side in SIDES}
        self._sole_in_ankle = {side: _site_in_parent(model, f"{side}_foot", f"{side}_ankle_link") for side in SIDES}
        self.fallbacks = 0
        """Frames whose hard foot pins were infeasible and fell back to the soft pin."""
        self.posture = mink.PostureTask(model, cost=config.posture_cost)
        self.posture.set_target(home_qpos(model))
        self.tasks = [self.pelvis, self.torso, *self.feet.values(), *self.position_tasks.values(), self.posture]
        self.facing = {}
        if config.hand_facing_cost > 0:
            self.facing = {side: AxisTask(model, f"{side}_elbow_link", axis=1, cost=0.0) for side in SIDES}
            self.tasks += list(self.facing.values())
        self.balance = None
        if config.balance_cost > 0:
            self.balance = mink.ComTask(cost=[config.balance_cost, config.balance_cost, 0.0])
            self.balance.set_target(np.zeros(3))  # set from the soles each frame
            self.tasks.append(self.balance)
        velocities = {name: config.max_joint_speed for name in JOINT_NAMES}
        self.limits = [mink.ConfigurationLimit(model), mink.VelocityLimit(model, velocities)]
        self._identity = np.eye(3)
        self._first = True
        self._first_iterations = config.first_iterations

    def reset(self, qpos: np.ndarray | None = None, iterations: int | None = None) -> None:
        """Start over from `qpos` (home by default); the next solve runs `iterations` (default `first_iterations`)."""
        self.configuration.update(home_qpos(self.model) if qpos is None else qpos)
        self._first = True
        self._first_iterations = self.config.first_iterations if iterations is None else max(1, iterations)

    def solve(self, targets: FrameTargets) -> np.ndarray:
        """[nq] the pose that best meets `targets`, starting from the last solution."""
        constraints = self._hard_pins(targets)
        self._set_targets(targets, hard=[pin.site_id for pin in constraints])
        if self._first:
            # Converge from the start pose, first moved to the target root so
            # the legs need not drag the body there: long steps, many of them.
            qpos = self.configuration.q.copy()
            qpos[:3] = targets.positions["pelvis"]
            self.configuration.update(qpos)
            iterations, dt = self._first_iterations, _FIRST_FRAME_STEP * self.dt
        else:
            # Warm start: the frame's time is split over its iterations, so the
            # velocity limit bounds the joint speed of the clip itself.
            iterations = self.config.iterations
            dt = self.dt / iterations
        start = self.configuration.q.copy()
        try:
            self._iterate(iterations, dt, constraints)
        except mink.NoSolutionFound:
            # Limits and pins conflict (a stance target beyond the leg's reach):
            # redo the frame with the pins as heavy tasks only.
            self.fallbacks += 1
            self.configuration.update(start)
            self._set_targets(targets, hard=[])
            self._iterate(iterations, dt, [])
        self._first = False
        return self.configuration.q.copy()

    def _iterate(self, iterations: int, dt: float, constraints: list[mink.Task]) -> None:
        for _ in range(iterations):
            velocity = mink.solve_ik(
                self.configuration, self.tasks, dt, self.config.solver, damping=self.config.damping,
                limits=self.limits, constraints=constraints,
            )
            self.configuration.integrate_inplace(velocity, dt)

    def _hard_pins(self, targets: FrameTargets) -> list[mink.Task]:
        """The sole pins of the feet fully in stance, targets set from their ankle targets."""
        if not self.config.hard_contacts:
            return []
        pins = []
        for index, side in enumerate(SIDES):
            if targets.pinned[index] < 1.0:
                continue
            axes = self._sole_in_ankle[side][1]
            self.sole_pins[side].set_target(self._sole_target(targets, side), targets.foot_rot[side] @ axes[:, 0])
            pins.append(self.sole_pins[side])
        return pins

    def _set_targets(self, targets: FrameTargets, hard: list[int]) -> None:
        """Set every task's target and each foot task's costs; `hard`: site ids of the hard-pinned soles."""
        config = self.config
        self.pelvis.set_target(_se3(targets.pelvis_rot, targets.positions["pelvis"]))
        self.torso.set_target(_se3(targets.torso_rot, targets.positions["chest"]))
        for index, side in enumerate(SIDES):
            task = self.feet[side]
            task.set_target(_se3(targets.foot_rot[side], targets.positions[f"{side}_ankle"]))
            pin = targets.pinned[index]
            free_position, free_orientation = config.position_costs[f"{side}_ankle"], config.foot_orientation_cost
            task.set_position_cost(free_position + pin * (config.contact_cost - free_position))
            # No ankle roll on the H1: a foot's roll is its leg's, so two flat
            # feet would fix the stance width. Pin only pitch and yaw.
            pinned_orientation = np.array([free_orientation, config.contact_cost, config.contact_cost])
            task.set_orientation_cost(free_orientation + pin * (pinned_orientation - free_orientation))
            if self.sole_pins[side].site_id in hard:
                # The pin holds this foot exactly; a heavy task on the same
                # foot (and its roll target) fights the constraint and makes
                # the Gauss-Newton steps oscillate.
                task.set_position_cost(0.0)
                task.set_orientation_cost(0.0)
        for key, task in self.position_tasks.items():
            task.set_target(_se3(self._identity, targets.positions[key]))
        if self.balance is not None:
            self._set_balance(targets)
        for side, task in self.facing.items():
            direction = None if targets.hand_facing is None else targets.hand_facing[side]
            weight = 0.0 if direction is None else float(np.linalg.norm(direction))
            task.cost = np.full(2, self.config.hand_facing_cost * min(weight, 1.0))
            if weight > 1e-9:
                task.set_target(direction)

    def _set_balance(self, targets: FrameTargets) -> None:
        """Centre of mass over the soles' midpoint while both stand, weighted by `targets.balance` (a pass smooths
        it over time: `standing_weight`) or else by how far both are pinned; a step is dynamic balance, left to the
        keypoints."""
        weight = min(targets.pinned) if targets.balance is None else targets.balance
        cost = self.config.balance_cost * weight
        self.balance.set_cost(np.array([cost, cost, 0.0]))
        if cost > 0:
            self.balance.set_target(np.mean([self._sole_target(targets, side) for side in SIDES], axis=0))

    def _sole_target(self, targets: FrameTargets, side: str) -> np.ndarray:
        """[3] where `side`'s sole centre is when its ankle meets its target."""
        return targets.positions[f"{side}_ankle"] + targets.foot_rot[side] @ self._sole_in_ankle[side][0]


def _site_in_parent(model: mujoco.MjModel, site: str, body: str) -> tuple[np.ndarray, np.ndarray]:
    """([3] position, [3, 3] axes) of `site` in the frame of `body`, which must be its parent."""
    site_id = model.site(site).id
    if model.site_bodyid[site_id] != model.body(body).id:
        raise UserError(f"the robot's site {site!r} must sit on the body {body!r} for foot pinning")
    axes = np.zeros(9)
    mujoco.mju_quat2Mat(axes, model.site_quat[site_id])
    return model.site_pos[site_id].copy(), axes.reshape(3, 3)


def _skew(v: np.ndarray) -> np.ndarray:
    """[3, 3] the matrix of `v cross .` (np.cross costs more than the IK's Jacobians on 3-vectors)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _se3(rotation: np.ndarray, translation: np.ndarray) -> mink.SE3:
    return mink.SE3.from_rotation_and_translation(mink.SO3.from_matrix(rotation), translation)
