"""Fetch: walk to the box, pick it up, carry it to the table and put it down."""

from dataclasses import dataclass, field

import jax.numpy as jnp

from metaworld_x.envs.observations import site_distances
from metaworld_x.envs.rewards import closeness, stance
from metaworld_x.envs.task import RewardScales, Task, TaskConfig
from metaworld_x.envs.tasks.box import BOX_JOINTS, BOX_SITES, HOLDING_DISTANCE, PALMS, UPRIGHT_TILT_DEG, box_features, check_max_tilt, resting_place, upright
from metaworld_x.scene.compose import FETCH_BOX

# Sub-goals in order; `info["phase"]` counts those reached (0 to 4).
SUBGOALS = ("approach", "lift", "transport", "place")
BOX_START_HEIGHT = FETCH_BOX[2]  # on the fetch scene's low stand


@dataclass(frozen=True)
class FetchRewards(RewardScales):
    stand: float = 0.2
    """Head high x torso upright x gentle servos."""
    progress: float = 0.8
    """(sub-goals reached + closeness to the next one) / 4."""


@dataclass(frozen=True)
class FetchConfig(TaskConfig):
    lift_height: float = 0.1
    """How far (m) off its stand the box must be raised for "lift" (the clip lifts it 0.75 m)."""
    transport_radius: float = 0.3
    """Horizontal distance (m) of the box from the table's centre that completes "transport"."""
    place_distance: float = 0.08
    """Distance (m) of the box from its resting place on the table that completes "place"."""
    max_tilt_deg: float = UPRIGHT_TILT_DEG
    """The most (degrees) the placed box may lean: a box rolled onto its side is not placed."""
    rewards: FetchRewards = field(default_factory=FetchRewards)

    def __post_init__(self):
        super().__post_init__()
        check_max_tilt(self.max_tilt_deg)


@dataclass(frozen=True)
class Fetch(Task):
    """A composite task in four sub-goals, reached in order and never lost:

    1. approach: both palms at the box, on its low stand;
    2. lift: the box raised `lift_height` off the stand, palms still on it;
    3. transport: the box within `transport_radius` of the table, horizontally;
    4. place: the box resting upright on the table top within `place_distance`.

    `metrics["subgoal/<name>"]` says which are done; `info["phase"]` counts them.
    Success: all four reached.
    """

    name = "fetch"
    scene = "fetch"  # laid out as the carry expert's clip has it (scene.compose)
    variant = "h1_hands"
    sites = BOX_SITES + ("table",)
    joints = BOX_JOINTS
    metric_names = tuple(f"subgoal/{g}" for g in SUBGOALS)
    Config = FetchConfig

    def reset_info(self, rng):
        return {"phase": jnp.zeros((), jnp.int32)}

    def features(self, view, info):
        phase = jnp.zeros(len(SUBGOALS) + 1).at[info["phase"]].set(1.0)
        return jnp.concatenate([box_features(view, "table"), phase])

    def _subgoal_closeness(self, view):
        """[4] how close each sub-goal is, in [0, 1], and [4] whether each is met now."""
        box, table = view.site("box"), view.site("table")
        palms = site_distances(view, PALMS, box).max()
        lift_target = BOX_START_HEIGHT + self.config.lift_height
        horizontal = jnp.linalg.norm(box[:2] - table[:2])
        to_rest = jnp.linalg.norm(box - resting_place(view))
        held = palms < HOLDING_DISTANCE + 0.05
        met = jnp.stack([
            held,
            held & (box[2] >= lift_target),
            horizontal < self.config.transport_radius,
            (to_rest < self.config.place_distance) & upright(view, self.config.max_tilt_deg),
        ])
        near = jnp.stack([
            closeness(palms, near=HOLDING_DISTANCE, margin=2.0),
            closeness(jnp.maximum(lift_target - box[2], 0.0), near=0.0, margin=self.config.lift_height) * held,
            closeness(horizontal, near=self.config.transport_radius, margin=3.0),
            closeness(to_rest, near=self.config.place_distance, margin=0.5),
        ])
        return near, met

    def advance(self, view, info):
        near, met = self._subgoal_closeness(view)
        phase = info["phase"]
        reached = jnp.where(phase < len(SUBGOALS), met[jnp.minimum(phase, len(SUBGOALS) - 1)], False)
        return {**info, "phase": phase + reached.astype(jnp.int32)}

    def _reward_stand(self, view, info, action):
        return stance(view)

    def _reward_progress(self, view, info, action):
        near, _ = self._subgoal_closeness(view)
        phase = info["phase"]
        partial = jnp.where(phase < len(SUBGOALS), near[jnp.minimum(phase, len(SUBGOALS) - 1)], 0.0)
        return (phase + partial) / len(SUBGOALS)

    def account(self, view, info, terms):
        return info, {f"subgoal/{g}": info["phase"] > i for i, g in enumerate(SUBGOALS)}

    def success(self, view, info):
        return info["phase"] >= len(SUBGOALS)
