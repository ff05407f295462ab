"""Rise: get up from the chair the robot sits on and stand (the reverse of sit)."""

from dataclasses import dataclass, field

from metaworld_x.envs.observations import relative_to_robot
from metaworld_x.envs.rewards import closeness, com_off_feet, on_feet, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig


@dataclass(frozen=True)
class RiseRewards(RewardScales):
    stand: float = 1.0
    """Head high x torso upright x gentle servos (HumanoidBench's stand reward) x the centre of mass over the feet:
    without the last, an expert learnt to stand its pelvis up against the chair's back with the feet out in front."""


@dataclass(frozen=True)
class RiseConfig(TaskConfig):
    fall_height: float = 0.5
    """The episode ends with reason "fall" when the pelvis is lower than this (m): below the seat."""
    rewards: RiseRewards = field(default_factory=RiseRewards)


@dataclass(frozen=True)
class Rise(Task):
    """Starting seated on the chair, stand up and stay standing.

    The start is the tracking task's (the rise clip begins seated): on its own
    the task starts standing at home, where success is only staying up.
    Success: on its feet (`rewards.on_feet`: head high, pelvis off the seat, torso upright) at the episode's end,
    as the sequential tasks' "standing".
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
        return stance(view) * closeness(com_off_feet(view), near=0.05, margin=0.25)

    def success(self, view, info):
        return on_feet(view)
