"""Push: shove the box along a table top onto the red marker (HumanoidBench's h1hand-push)."""

from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.observations import site_distances
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.envs.tasks.box import BOX_JOINTS, BOX_SITES, PALMS, box_features


@dataclass(frozen=True)
class PushRewards(RewardScales):
    box_to_marker: float = -1.0
    """Per step, minus the box's horizontal distance (m) to the marker's centre."""
    hand_to_box: float = -0.1
    """Per step, minus the nearer palm's distance (m) to the box."""
    success_bonus: float = 1000.0
    """Once, when the box reaches the marker (which ends the episode)."""


@dataclass(frozen=True)
class PushConfig(TaskConfig):
    episode_length: int = 500
    """Control steps per episode (HumanoidBench's push is half as long as the others)."""
    success_distance: float = 0.1
    """The box's centre this close (m, horizontally) to the marker's is a success."""
    rewards: PushRewards = field(default_factory=PushRewards)


@dataclass(frozen=True)
class Push(Task):
    """Push the box along the table top onto the marker with the paddle hands.

    Rewards are HumanoidBench's: distance penalties plus a one-off bonus.
    Success (which also ends the episode, reason "success"): the box's
    centre within `config.success_distance` of the marker's, horizontally.
    """

    name = "push"
    scene = "push"
    variant = "h1_hands"
    sites = BOX_SITES + ("marker",)
    joints = BOX_JOINTS
    termination_reasons = ("fall", "success")
    Config = PushConfig

    def _box_to_marker(self, view):
        return jnp.linalg.norm(view.site("box")[:2] - view.site("marker")[:2])

    def features(self, view, info):
        return box_features(view, "marker")

    def _reward_box_to_marker(self, view, info, action):
        return self._box_to_marker(view)

    def _reward_hand_to_box(self, view, info, action):
        return site_distances(view, PALMS, view.site("box")).min()

    def _reward_success_bonus(self, view, info, action):
        return self.success(view, info).astype(jnp.float32)

    def _terminate_success(self, view, info):
        return self.success(view, info)

    def success(self, view, info):
        return self._box_to_marker(view) < self.config.success_distance
