"""How well a clip reproduces its source, and whether the robot can play it.

Figures (all per clip):
- `keypoint_error_mean` / `_max` (m): distance between the robot's limb end
  points (ankles, hand sites) and their targets, the human in the robot's
  proportions (see `scaling`);
- `penetration` (m): deepest point of any robot geom below the floor;
- `skating` (m/s): mean horizontal speed of a foot's sole centre (the
  `{side}_foot` site) over pairs of consecutive stance frames. It is the point
  the IK pins (`ik.SolePinTask`), and it lies on the foot's centre line with
  the toe and heel edges, about which the pinned foot may only roll, so it
  measures the slide of whichever of them bears the weight;
- `limit_violations`: frames x joints outside the joint range;
- `speed` (frames/s): retargeting throughput, frames per CPU-second of the
  retargeting process (resampling, both IK passes, floor and contacts).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from metaworld_x.motion.scaling import END_POINTS, KEYPOINT_NAMES
from metaworld_x.robot.constants import JOINT_NAMES

# Goals a shipped clip must meet (metres, m/s, count).
GOALS = {"keypoint_error_mean": 0.05, "penetration": 0.01, "skating": 0.02, "limit_violations": 0}
_LIMIT_SLACK = 1e-3  # rad, below the float32 rounding of a clip's angles


@dataclass(frozen=True)
class Quality:
    """Retarget quality figures of one clip (see the module docstring)."""

    keypoint_error_mean: float
    keypoint_error_max: float
    penetration: float
    skating: float
    limit_violations: int
    speed: float

    def as_dict(self) -> dict[str, float]:
        return {key: getattr(self, key) for key in self.__dataclass_fields__}

    def missed(self, *, tracking: bool = True) -> dict[str, float]:
        """{figure: value} for each goal not met; `tracking=False` skips the keypoint goal (keyframed clips)."""
        values = self.as_dict()
        return {
            key: values[key] for key, goal in GOALS.items()
            if values[key] > goal and (tracking or key != "keypoint_error_mean")
        }


def end_point_errors(keypoint_pos: np.ndarray, target_pos: np.ndarray) -> np.ndarray:
    """[T, 4] distance (m) of each limb end point from its target; inputs [T, K, 3] in KEYPOINT_NAMES order."""
    columns = [KEYPOINT_NAMES.index(name) for name in END_POINTS]
    return np.linalg.norm(keypoint_pos[:, columns] - target_pos[:, columns], axis=-1)


def foot_skating(sole_position: np.ndarray, contacts: np.ndarray, fps: float) -> float:
    """Mean horizontal sole speed (m/s) over stance frames; [T, 2, 3] soles, [T, 2] flags."""
    if not contacts.any():
        return 0.0
    velocity = np.diff(sole_position[..., :2], axis=0) * fps
    # A step between two stance frames of the same foot is a slide.
    both = contacts[1:] & contacts[:-1]
    if not both.any():
        return 0.0
    return float(np.linalg.norm(velocity, axis=-1)[both].mean())


def limit_excess(model: mujoco.MjModel, joint_pos: np.ndarray) -> np.ndarray:
    """[T, 19] how far (rad) each joint is past its range, 0 within it; joint_pos [T, 19] in JOINT_NAMES order."""
    ranges = np.array([model.jnt_range[model.joint(name).id] for name in JOINT_NAMES])
    return np.maximum(np.maximum(ranges[:, 0] - joint_pos, joint_pos - ranges[:, 1]), 0.0)


def outside_limits(model: mujoco.MjModel, joint_pos: np.ndarray) -> np.ndarray:
    """[T, 19] whether each joint is outside its range (beyond the float32 rounding of a clip's angles)."""
    return limit_excess(model, joint_pos) > _LIMIT_SLACK


def limit_violations(model: mujoco.MjModel, joint_pos: np.ndarray) -> int:
    """Number of (frame, joint) pairs outside the joint's range; joint_pos [T, 19] in JOINT_NAMES order."""
    return int(np.sum(outside_limits(model, joint_pos)))


def measure(
    model: mujoco.MjModel,
    joint_pos: np.ndarray,
    keypoint_pos: np.ndarray,
    target_pos: np.ndarray,
    lowest: np.ndarray,
    sole_position: np.ndarray,
    contacts: np.ndarray,
    fps: float,
    speed: float,
) -> Quality:
    """Quality of a retargeted clip.

    Args:
      joint_pos: [T, 19]; keypoint_pos, target_pos: [T, K, 3]; lowest: [T]
        lowest point of the robot; sole_position: [T, 2, 3]; contacts: [T, 2].
      speed: frames retargeted per second of wall time.
    """
    errors = end_point_errors(keypoint_pos, target_pos)
    return Quality(
        keypoint_error_mean=float(errors.mean()),
        keypoint_error_max=float(errors.max()),
        penetration=float(max(0.0, -lowest.min())),
        skating=foot_skating(sole_position, contacts, fps),
        limit_violations=limit_violations(model, joint_pos),
        speed=float(speed),
    )
