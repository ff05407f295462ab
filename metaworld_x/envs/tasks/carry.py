"""Carry: take the box to the table and set it down on it, with paddle hands."""

from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from metaworld_x.envs.observations import site_distances
from metaworld_x.envs.rewards import closeness, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.envs.tasks.box import BOX_JOINTS, BOX_SITES, HOLDING_DISTANCE, PALMS, box_features
from metaworld_x.errors import UserError
from metaworld_x.scene.compose import Placement
from metaworld_x.scene.props import BOX_HALF_SIZE, default_box_height

# How far (m) a clip-aligned table's top reaches beyond the box's footprint on each side: enough to
# set the box down on and no more, for the carry clip walks up close (its left thigh passes 6 cm from it).
TABLE_MARGIN = 0.05
# A clip's box starting lower than this (m) above the floor rests on it: pickup_carry's grip puts it 5 cm up.
FLOOR_SNAP = 0.1


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
    """Carry the box to the table and set it down on the middle of its top.

    In its own scene ("carry") the box starts on a stand at x = 1 and the
    table is at x = 3. A tracking task with `scene_from_clip` lays the scene
    out along its clip instead (`scene_along`): the table where the clip sets
    the box down, which the clip's hands already hold.

    Success: the box's centre comes within `config.success_distance` of its
    resting place at the middle of the table top.
    """

    name = "carry"
    scene = "carry"
    variant = "h1_hands"
    sites = BOX_SITES + ("table",)
    joints = BOX_JOINTS
    Config = CarryConfig

    @staticmethod
    def scene_along(box_path: np.ndarray) -> tuple[Placement, ...]:
        """The props laid out for a clip whose box follows `box_path` [T, 3] (world positions, m).

        The box starts at its first position, or resting on the floor when
        that is within `FLOOR_SNAP` of it (the clip's grip puts a box lying on
        the floor a few centimetres high); the table stands centred under its
        last, its top just under the box's bottom there, so the clip's last
        frame sets the box down on it.
        """
        start, end = (tuple(float(v) for v in p) for p in (box_path[0], box_path[-1]))
        if start[2] - BOX_HALF_SIZE[2] < FLOOR_SNAP:
            start = (start[0], start[1], default_box_height(None))
        height = end[2] - BOX_HALF_SIZE[2]
        if height <= 0.1:
            raise UserError(f"the clip leaves the box {end[2]:.2f} m high, too low for a table under it")
        half_top = (BOX_HALF_SIZE[0] + TABLE_MARGIN, BOX_HALF_SIZE[1] + TABLE_MARGIN)
        return (
            Placement("box", start),
            Placement("table", (end[0], end[1], 0.0), (("height", height), ("half_top", half_top))),
        )

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
