"""Carry: take the box from the stand to the table, with paddle hands."""

from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.observations import site_distances
from metaworld_x.envs.rewards import closeness, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.envs.tasks.box import BOX_JOINTS, BOX_SITES, HOLDING_DISTANCE, PALMS, box_features
from metaworld_x.scene.props import BOX_HALF_SIZE

@dataclass(frozen=True)
class CarryRewards(RewardScales):
    stand: float = 0.2
    """Head high x torso upright x gentle servos."""
    hold: float = 0.3
    """Both palms at the box: 1 when pressed on it, 0 a metre away."""
    deliver: float = 0.5
    """The box's closeness to its resting place on the table: 1 within 0.1 m, 0 beyond 3 m more."""


@dataclass(frozen=True)
class CarryConfig(TaskConfig):
    success_distance: float = 0.1
    """The box resting this close (m) to the middle of the table top is a success."""
    rewards: CarryRewards = field(default_factory=CarryRewards)


@dataclass(frozen=True)
class Carry(Task):
    """Pick the box up from the stand, walk it to the table and set it down.

    Success: the box's centre comes within `config.success_distance` of its
    resting place at the middle of the table top.
    """

    name = "carry"
    scene = "carry"
    variant = "h1_hands"
    sites = BOX_SITES + ("table", "stand")
    joints = BOX_JOINTS
    Config = CarryConfig

    def _box_to_goal(self, view):
        goal = view.site("table") + jnp.asarray([0.0, 0.0, BOX_HALF_SIZE[2]])
        return jnp.linalg.norm(view.site("box") - goal)

    def features(self, view, info):
        return box_features(view, "table")

    def _reward_stand(self, view, info, action):
        return stance(view)

    def _reward_hold(self, view, info, action):
        return closeness(site_distances(view, PALMS, view.site("box")), near=HOLDING_DISTANCE, margin=1.0).mean()

    def _reward_deliver(self, view, info, action):
        return closeness(self._box_to_goal(view), near=0.1, margin=3.0)

    def success(self, view, info):
        return self._box_to_goal(view) < self.config.success_distance
