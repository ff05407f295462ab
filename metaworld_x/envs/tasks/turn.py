"""Turn: turn round on the spot, from facing +x (the home pose) to facing -x, and stand."""

import math
from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.observations import yaw
from metaworld_x.envs.rewards import closeness, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig


@dataclass(frozen=True)
class TurnRewards(RewardScales):
    turned: float = 1.0
    """Standing (HumanoidBench's stand reward) x facing -x: 1 within the tolerance, falling to 0 facing +x."""


@dataclass(frozen=True)
class TurnConfig(TaskConfig):
    tolerance_deg: float = 30.0
    """How far (degrees) the heading may be from -x to count as turned (the sequential tasks' "turn")."""
    rewards: TurnRewards = field(default_factory=TurnRewards)


def heading_off(root_quat) -> jnp.ndarray:
    """Angle (rad, in [0, pi]) between the robot's heading and -x."""
    return jnp.abs(jnp.angle(jnp.exp(1j * (yaw(root_quat) - math.pi))))


def turned(view, tolerance_rad: float) -> jnp.ndarray:
    """Standing (HumanoidBench's stance over 0.5) and facing -x within `tolerance_rad`: a robot that went down while
    its heading swung round has not turned."""
    return (stance(view) > 0.5) & (heading_off(view.root_quat) < tolerance_rad)


@dataclass(frozen=True)
class Turn(Task):
    """Turn round on the spot and stand facing back the way the robot faced at the start.

    Success: upright and facing -x within `tolerance_deg` at the episode's end.
    """

    name = "turn"
    scene = "floor"
    Config = TurnConfig

    def _reward_turned(self, view, info, action):
        tolerance = math.radians(self.config.tolerance_deg)
        return stance(view) * closeness(heading_off(view.root_quat), near=tolerance, margin=math.pi - tolerance)

    def success(self, view, info):
        return turned(view, math.radians(self.config.tolerance_deg))
