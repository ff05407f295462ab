"""Walk: go forward (+x) at a target speed (HumanoidBench's h1-walk)."""

from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.rewards import move, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.errors import UserError


@dataclass(frozen=True)
class WalkRewards(RewardScales):
    locomotion: float = 1.0
    """Head high x torso upright x gentle servos x forward speed of the centre of mass."""


@dataclass(frozen=True)
class WalkConfig(TaskConfig):
    target_speed: float = 1.0
    """Forward speed (m/s) at and above which the speed factor is 1."""
    rewards: WalkRewards = field(default_factory=WalkRewards)

    def __post_init__(self):
        super().__post_init__()
        if not self.target_speed > 0:
            raise UserError(f"target_speed must be positive, got {self.target_speed}; the stand task is for 0")


@dataclass(frozen=True)
class Walk(Task):
    """Walk forward along +x at `config.target_speed` or faster.

    The target speed is a task variable (`info["target_speed"]`) and part of
    the observation, so a policy can be commanded other speeds.
    Success: the episode return reaches HumanoidBench's bar of 700.
    """

    name = "walk"
    scene = "floor"
    success_bar = 700.0
    Config = WalkConfig

    def reset_info(self, rng):
        return {"target_speed": jnp.asarray(self.config.target_speed, jnp.float32)}

    def features(self, view, info):
        return info["target_speed"][None]

    def _reward_locomotion(self, view, info, action):
        return stance(view) * move(view.com_vel[0], info["target_speed"])
