"""Stand: stay upright on the spot (HumanoidBench's h1-stand)."""

from dataclasses import dataclass, field

from metaworld_x.envs.rewards import dont_move, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig


@dataclass(frozen=True)
class StandRewards(RewardScales):
    stand_still: float = 1.0
    """Head high x torso upright x gentle servos x centre of mass not drifting."""


@dataclass(frozen=True)
class StandConfig(TaskConfig):
    rewards: StandRewards = field(default_factory=StandRewards)


@dataclass(frozen=True)
class Stand(Task):
    """Stand still on the floor for the whole episode.

    Success: the episode return reaches HumanoidBench's bar of 800 (of at
    most 1000), i.e. the robot stands tall and still for most of the episode.
    """

    name = "stand"
    scene = "floor"
    success_bar = 800.0
    Config = StandConfig

    def _reward_stand_still(self, view, info, action):
        return stance(view) * dont_move(view)
