"""Rise: get up from the chair the robot sits on and stand (the reverse of sit)."""

from dataclasses import dataclass, field

from metaworld_x.envs.observations import relative_to_robot
from metaworld_x.envs.rewards import stance, torso_upright
from metaworld_x.envs.task import RewardScales, Task, TaskConfig


@dataclass(frozen=True)
class RiseRewards(RewardScales):
    stand: float = 1.0
    """Head high x torso upright x gentle servos (HumanoidBench's stand reward): 0 while seated."""


@dataclass(frozen=True)
class RiseConfig(TaskConfig):
    fall_height: float = 0.5
    """The episode ends with reason "fall" when the pelvis is lower than this (m): below the seat."""
    stand_head_height: float = 1.45
    """Head height (m) above which the robot counts as standing (the sequential tasks' "standing")."""
    rewards: RiseRewards = field(default_factory=RiseRewards)


@dataclass(frozen=True)
class Rise(Task):
    """Starting seated on the chair, stand up and stay standing.

    The start is the tracking task's (the rise clip begins seated): on its own
    the task starts standing at home, where success is only staying up.
    Success: standing upright (head above `stand_head_height`) at the episode's end.
    """

    name = "rise"
    scene = "chair"
    bodies = ("chair",)
    sites = ("chair_seat",)
    Config = RiseConfig

    def features(self, view, info):
        # The sit task's features: a sit expert's policy can start a rise expert's training.
        return relative_to_robot(view, view.site("chair_seat"))

    def _reward_stand(self, view, info, action):
        return stance(view)

    def success(self, view, info):
        return (view.site("head")[2] > self.config.stand_head_height) & (torso_upright(view) > 0.9)
