"""Sit: sit down on the chair behind the robot (HumanoidBench's h1-sit_simple)."""

from dataclasses import dataclass, field

from metaworld_x.envs.observations import relative_to_robot
from metaworld_x.envs.rewards import INF, dont_move, small_control, tolerance, torso_upright
from metaworld_x.envs.task import RewardScales, Task, TaskConfig


@dataclass(frozen=True)
class SitRewards(RewardScales):
    sit: float = 1.0
    """Pelvis at seat height over the chair x torso upright x sitting posture x gentle servos x still."""


@dataclass(frozen=True)
class SitConfig(TaskConfig):
    fall_height: float = 0.5
    """The episode ends with reason "fall" when the pelvis is lower than this (m): below the seat."""
    seat_height: tuple[float, float] = (0.68, 0.72)
    """Pelvis height range (m) that counts as seated on our chair."""
    rewards: SitRewards = field(default_factory=SitRewards)


@dataclass(frozen=True)
class Sit(Task):
    """Sit on the chair behind the robot, torso upright, and stay there.

    Success: the episode return reaches HumanoidBench's bar of 750.
    """

    name = "sit"
    scene = "chair"
    bodies = ("chair",)
    sites = ("chair_seat",)
    success_bar = 750.0
    Config = SitConfig

    def features(self, view, info):
        return relative_to_robot(view, view.site("chair_seat"))

    def _reward_sit(self, view, info, action):
        root, chair = view.root_pos, view.body("chair")
        sitting = tolerance(root[2], bounds=self.config.seat_height, margin=0.2)
        on_chair = tolerance(root[0] - chair[0], bounds=(-0.19, 0.19), margin=0.2) * tolerance(
            root[1] - chair[1], margin=0.1
        )
        # head above the torso's imu site: an upright, seated torso
        posture = tolerance(view.site("head")[2] - view.site("imu")[2], bounds=(0.35, 0.45), margin=0.3)
        upright = tolerance(torso_upright(view), bounds=(0.95, INF), sigmoid="linear", margin=0.9, value_at_margin=0.0)
        seated = (0.5 * sitting + 0.5 * on_chair) * upright * posture
        return small_control(view) * seated * dont_move(view)
