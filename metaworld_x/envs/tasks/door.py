"""Door: push the hinged door open and walk through (HumanoidBench's h1hand-door)."""

from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.observations import relative_to_robot, site_distances
from metaworld_x.envs.rewards import INF, closeness, stance, tolerance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.envs.tasks.box import PALMS


@dataclass(frozen=True)
class DoorRewards(RewardScales):
    stand: float = 0.1
    """Head high x torso upright x gentle servos."""
    open: float = 0.45
    """How open the door is: min(1, angle * |angle|), angle in rad."""
    handle: float = 0.1
    """The nearer palm's closeness to the handle: 1 within 0.25 m, 0 a metre further."""
    passage: float = 0.35
    """The torso's progress along x to the point past the doorway: 1 there and beyond, 0 two metres before."""


@dataclass(frozen=True)
class DoorConfig(TaskConfig):
    fall_height: float = 0.58
    """The episode ends with reason "fall" when the pelvis is lower than this (m), as in HumanoidBench."""
    open_angle: float = 1.0
    """Hinge angle (rad) that counts as open for success."""
    rewards: DoorRewards = field(default_factory=DoorRewards)


@dataclass(frozen=True)
class Door(Task):
    """Open the door ahead by pushing it, then walk through the doorway.

    Success: the hinge is open by at least `config.open_angle` and the torso
    (imu site) has passed the `door_through` site along x.
    """

    name = "door"
    scene = "door"
    variant = "h1_hands"
    sites = PALMS + ("door_handle", "door_through")
    joints = ("door_hinge",)
    Config = DoorConfig

    def features(self, view, info):
        return jnp.concatenate([
            view.joint_qpos("door_hinge"), view.joint_qvel("door_hinge"),
            relative_to_robot(view, view.site("door_handle")), relative_to_robot(view, view.site("door_through")),
        ])

    def _reward_stand(self, view, info, action):
        return stance(view)

    def _reward_open(self, view, info, action):
        angle = view.joint_qpos("door_hinge")[0]
        return jnp.minimum(1.0, angle * jnp.abs(angle))

    def _reward_handle(self, view, info, action):
        return closeness(site_distances(view, PALMS, view.site("door_handle")).min(), near=0.25, margin=1.0)

    def _reward_passage(self, view, info, action):
        goal = view.site("door_through")[0]
        progress = view.site("imu")[0] - goal
        return tolerance(progress, bounds=(0.0, INF), margin=2.0, sigmoid="linear", value_at_margin=0.0)

    def success(self, view, info):
        opened = view.joint_qpos("door_hinge")[0] >= self.config.open_angle
        return opened & (view.site("imu")[0] >= view.site("door_through")[0])
