"""Sequential tasks: skills in turn, each ending at a sub-goal, in a scene laid out from their props.

A `Sequence` is an ordered tuple of `Subgoal`s, reached in order and never
lost: `info["phase"]` counts those reached, and success needs all of them.
Each sub-goal names

- its `kind`, a predicate on the view (`met`, plus a closeness in [0, 1] that
  shapes the progress reward);
- the `skill` that does it: the expert a scripted state machine runs in that
  phase, and the one the language labels point at;
- the `clause` of the instruction that asked for it;
- where it is: a world `point` (for "arrive", "walked", "touch") and the
  prop it is about.

No expert is trained on a sequence: each expert stays one skill, and a router
(or the scripted baseline) chains them. The router observes the phase and the
current sub-goal's point relative to the robot (`features`), padded to
`MAX_SUBGOALS` so every sequence has the same observation size.
"""

import functools
import math
from dataclasses import dataclass, field
from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from metaworld_x.envs.observations import relative_to_robot
from metaworld_x.envs.rewards import ON_FEET_PELVIS_HEIGHT, closeness, on_feet, stance, tolerance, torso_upright
from metaworld_x.envs.task import RewardScales, Task, TaskConfig, perturb_robot
from metaworld_x.envs.tasks.box import BOX_JOINTS, BOX_SITES, PALMS
from metaworld_x.envs.tasks.stop import STILL_SPEED, horizontal_speed, stopped
from metaworld_x.envs.tasks.turn import heading_off, turned
from metaworld_x.errors import UserError
from metaworld_x.scene.compose import Placement

MAX_SUBGOALS = 5
"""The most sub-goals a sequence has; the phase one-hot has this many + 1 entries."""
HELD = ("still", "seated", "standing", "turn")
"""Postures that count only once held for `hold_steps`."""
STEERED = ("arrive", "walked")
"""Sub-goals that steer: getting somewhere. The crawl is left alone: with the run and the crawl both steered,
run_crawl got through in none of 4 episodes, against 2 of 4 with neither steered."""
STEER_STOP = 0.5
"""Within this distance (m) of its point a sub-goal no longer steers: the heading to a point underfoot is noise."""
KINDS = ("arrive", "still", "turn", "seated", "through", "touch", "on_marker", "door", "standing", "walked")

# What each prop adds to a task's view: (bodies, sites, joints).
PROP_OBJECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "chair": (("chair",), ("chair_seat",), ()),
    "tunnel": ((), ("tunnel_exit",), ()),
    "target": ((), ("target",), ()),
    "table": ((), ("table",), ()),
    "box": ((), BOX_SITES, BOX_JOINTS),
    "marker": ((), ("marker",), ()),
    "door": ((), PALMS + ("door_handle", "door_through"), ("door_hinge",)),
}
HAND_PROPS = ("box", "door")  # props whose skills are trained with the paddle hands (the h1_hands variant)


@dataclass(frozen=True)
class Subgoal:
    """One step of a sequence."""

    kind: str
    """The predicate, one of KINDS."""
    skill: str
    """The expert that does it (the scripted baseline's choice in this phase)."""
    clause: str
    """The words of the instruction that ask for it."""
    prop: str | None = None
    """The prop it is about (None: the floor)."""
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """A world point: where to arrive, the target to touch, or (walked) where the walk must pass along x."""
    radius: float = 0.3
    """arrive: horizontal distance (m) to `point` that counts as arrived; touch: hand distance (m)."""
    anchor: tuple[float, float, float] | None = None
    """(x, y, yaw): the world ground pose where the skill's clip begins, for an expert trained with its clip anchored
    once (`TrackingConfig.home_anchor`): its reference then stays there instead of following the robot, so the skill
    ends where the next one needs the robot (a stop, on the spot a turn and then the sit start from). None: wherever
    the robot is."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UserError(f"unknown sub-goal kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if not self.radius > 0:
            raise UserError(f"a sub-goal's radius must be positive, got {self.radius}")
        if self.anchor is not None:
            if len(self.anchor) != 3:
                raise UserError(f"a sub-goal's anchor is (x, y, yaw), got {self.anchor}")
            object.__setattr__(self, "anchor", tuple(float(a) for a in self.anchor))


@dataclass(frozen=True)
class SequenceRewards(RewardScales):
    stand: float = 0.2
    """Head high x torso upright x gentle servos (0 while seated or crawling is fine: progress pays more)."""
    progress: float = 0.8
    """(sub-goals reached + closeness to the next one) / number of sub-goals."""


@dataclass(frozen=True)
class SequenceConfig(TaskConfig):
    episode_length: int = 1500
    """Control steps per episode: 30 s, room for two or three skills in turn."""
    seat_height: tuple[float, float] = (0.68, 0.72)
    """Pelvis height range (m) that counts as seated (the sit task's)."""
    hold_steps: int = 25
    """Control steps a posture (HELD: still, seated, standing, turned) must hold before its sub-goal counts."""
    still_speed: float = STILL_SPEED
    """Speed (m/s) of the centre of mass under which the robot counts as stopped: horizontal for "still", in all
    directions for "standing" (risen, not rising)."""
    turn_tolerance_deg: float = 30.0
    """How far (degrees) the heading may be from facing back along -x for "turn"."""
    open_angle: float = 1.0
    """Hinge angle (rad) that counts as open (the door task's)."""
    marker_distance: float = 0.1
    """The box's centre this close (m, horizontally) to the marker's is on it (the push task's)."""
    rewards: SequenceRewards = field(default_factory=SequenceRewards)

    def __post_init__(self):
        super().__post_init__()
        if self.hold_steps < 1:
            raise UserError(f"hold_steps must be at least 1, got {self.hold_steps}")


@dataclass(frozen=True)
class Sequence(Task):
    """Sub-goals reached in order (`subgoals`), in the scene `scene` (a tuple of Placements).

    `metrics["subgoal/<i>"]` says which are done; `info["phase"]` counts them.
    Success: all of them reached.
    """

    name: ClassVar[str] = "sequence"
    subgoals: ClassVar[tuple[Subgoal, ...]] = ()
    scene: ClassVar[tuple[Placement, ...]] = ()
    start: ClassVar[str] = "home"
    """"home": standing at the origin facing +x; "seated": on the chair behind, as the sit clip ends."""
    Config = SequenceConfig

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.subgoals:
            check_subgoals(cls.subgoals, tuple(p.prop for p in cls.scene))
            props = [p.prop for p in cls.scene]
            cls.bodies = tuple(dict.fromkeys(b for p in props for b in PROP_OBJECTS.get(p, ((), (), ()))[0]))
            cls.sites = tuple(dict.fromkeys(s for p in props for s in PROP_OBJECTS.get(p, ((), (), ()))[1]))
            cls.joints = tuple(dict.fromkeys(j for p in props for j in PROP_OBJECTS.get(p, ((), (), ()))[2]))
            cls.variant = "h1_hands" if any(p in HAND_PROPS for p in props) else "h1"
            cls.metric_names = tuple(f"subgoal/{i}" for i in range(len(cls.subgoals)))

    # ---- episode start ------------------------------------------------------------

    def reset_info(self, rng):
        info = {"phase": jnp.zeros((), jnp.int32), "hold": jnp.zeros((), jnp.int32)}
        touch = [g for g in self.subgoals if g.kind == "touch"]
        if touch:  # the reach expert reads the target from the task's variables, as in its own task
            info.update(target=jnp.asarray(touch[0].point, jnp.float32), touched=jnp.zeros((), bool))
        return info

    def start_root(self, model) -> np.ndarray:
        if self.start == "seated":
            return np.asarray(seated_qpos()[:3])
        return super().start_root(model)

    def reset_physics(self, rng, home, info):
        if self.start == "seated":
            seated = jnp.asarray(seated_qpos(), jnp.float32)
            home = home.replace(qpos=home.qpos.at[: seated.size].set(seated))
        init = perturb_robot(rng, home, self.config.reset_noise)
        if "target" in info:  # the scene's one mocap body shows the target
            init = init.replace(mocap_pos=init.mocap_pos.at[0].set(info["target"]))
        return init

    # ---- sub-goals ----------------------------------------------------------------

    def _goal(self, view, info, goal: Subgoal):
        """(met now, closeness in [0, 1]) of one sub-goal."""
        c = self.config
        root = view.root_pos
        point = jnp.asarray(goal.point, jnp.float32)
        if goal.kind == "arrive":
            distance = jnp.linalg.norm(root[:2] - point[:2])
            return distance < goal.radius, closeness(distance, near=goal.radius, margin=5.0)
        if goal.kind == "walked":
            ahead = point[0] - root[0]
            return ahead <= 0.0, closeness(jnp.maximum(ahead, 0.0), near=0.0, margin=5.0)
        if goal.kind == "still":  # the stop expert's success
            speed = horizontal_speed(view)
            return stopped(view, c.still_speed), closeness(speed, near=c.still_speed, margin=1.5)
        if goal.kind == "turn":
            off = heading_off(view.root_quat)
            tolerance_rad = math.radians(c.turn_tolerance_deg)
            return turned(view, tolerance_rad), closeness(off, near=tolerance_rad, margin=math.pi)
        if goal.kind == "seated":
            seat = view.site("chair_seat")
            height = tolerance(root[2], bounds=c.seat_height, margin=0.2)
            over = closeness(jnp.linalg.norm(root[:2] - seat[:2]), near=0.19, margin=1.0)
            upright = torso_upright(view) > 0.8
            met = (c.seat_height[0] - 0.05 <= root[2]) & (root[2] <= c.seat_height[1] + 0.05) & (over >= 1.0) & upright
            return met, 0.5 * height + 0.5 * over
        if goal.kind == "standing":
            # The head is high seated too: the pelvis tells. And up means done rising: passing the height mid-rise, a
            # robot handed to the walk there fell within 2 s in 4 of 10 episodes.
            rise = jnp.maximum(ON_FEET_PELVIS_HEIGHT - root[2], 0.0)
            settled = jnp.linalg.norm(view.com_vel) < c.still_speed
            return on_feet(view) & settled, closeness(rise, near=0.0, margin=ON_FEET_PELVIS_HEIGHT - c.seat_height[0])
        if goal.kind == "through":
            exit_x = view.site("tunnel_exit" if goal.prop == "tunnel" else "door_through")[0]
            ahead = exit_x - view.site("imu")[0]
            return ahead <= 0.0, closeness(jnp.maximum(ahead, 0.0), near=0.0, margin=6.0)
        if goal.kind == "touch":
            distance = jnp.linalg.norm(view.site("right_hand") - point)
            return distance < goal.radius, closeness(distance, near=goal.radius, margin=0.5)
        if goal.kind == "on_marker":
            distance = jnp.linalg.norm(view.site("box")[:2] - view.site("marker")[:2])
            return distance < c.marker_distance, closeness(distance, near=c.marker_distance, margin=0.3)
        if goal.kind == "door":
            opened = view.joint_qpos("door_hinge")[0] >= c.open_angle
            ahead = view.site("door_through")[0] - view.site("imu")[0]
            near = 0.5 * jnp.minimum(view.joint_qpos("door_hinge")[0] / c.open_angle, 1.0) + 0.5 * closeness(
                jnp.maximum(ahead, 0.0), near=0.0, margin=3.0)
            return opened & (ahead <= 0.0), near
        raise AssertionError(goal.kind)  # Subgoal checks its kind

    def _current(self, view, info):
        """(met, closeness) of the sub-goal the phase points at (the last one once all are reached)."""
        results = [self._goal(view, info, g) for g in self.subgoals]
        met = jnp.stack([jnp.asarray(m) for m, _ in results])
        near = jnp.stack([jnp.asarray(n, jnp.float32) for _, n in results])
        index = self._current_index(info)
        return met[index], near[index]

    def _current_index(self, info):
        """The index of the sub-goal the phase points at: the next to reach, or the last once all are reached."""
        return jnp.minimum(info["phase"], len(self.subgoals) - 1)

    def advance(self, view, info):
        met, _ = self._current(view, info)
        phase = info["phase"]
        holds = jnp.asarray([g.kind in HELD for g in self.subgoals])
        index = self._current_index(info)
        hold = jnp.where(met, info["hold"] + 1, 0)
        needed = jnp.where(holds[index], self.config.hold_steps, 1)
        reached = (phase < len(self.subgoals)) & (hold >= needed)
        info = {**info, "phase": phase + reached.astype(jnp.int32), "hold": jnp.where(reached, 0, hold)}
        if "touched" in info:
            touch = next(g for g in self.subgoals if g.kind == "touch")
            info["touched"] = info["touched"] | (jnp.linalg.norm(view.site("right_hand") - info["target"]) < touch.radius)
        return info

    def features(self, view, info):
        """[MAX_SUBGOALS + 1 + 3] the phase one-hot, then the current sub-goal's point relative to the robot."""
        phase = jnp.zeros(MAX_SUBGOALS + 1).at[info["phase"]].set(1.0)
        points = jnp.asarray([self._point_of(g) for g in self.subgoals], jnp.float32)
        return jnp.concatenate([phase, relative_to_robot(view, points[self._current_index(info)])])

    def steer_point(self, view, info):
        """(world point [2], active): where locomotion experts are steered: the current sub-goal's point, while it is
        one of STEERED and more than STEER_STOP away."""
        points = jnp.asarray([self._point_of(g)[:2] for g in self.subgoals], jnp.float32)
        steers = jnp.asarray([g.kind in STEERED for g in self.subgoals])
        index = self._current_index(info)
        return points[index], steers[index] & (jnp.linalg.norm(points[index] - view.root_pos[:2]) > STEER_STOP)

    def clip_anchor(self, info):
        """(ground pose [3], active): the current sub-goal's `anchor`, and whether it has one."""
        anchors = jnp.asarray([g.anchor or (0.0, 0.0, 0.0) for g in self.subgoals], jnp.float32)
        has = jnp.asarray([g.anchor is not None for g in self.subgoals])
        index = self._current_index(info)
        return anchors[index], has[index]

    def _point_of(self, goal: Subgoal) -> tuple[float, float, float]:
        if goal.kind in ("arrive", "walked", "touch") or goal.prop is None:
            return goal.point
        return next(p.pos for p in self.scene if p.prop == goal.prop)

    # ---- rewards and success ------------------------------------------------------

    def _reward_stand(self, view, info, action):
        return stance(view)

    def _reward_progress(self, view, info, action):
        _, near = self._current(view, info)
        phase = info["phase"]
        partial = jnp.where(phase < len(self.subgoals), near, 0.0)
        return (phase + partial) / len(self.subgoals)

    def account(self, view, info, terms):
        return info, {f"subgoal/{i}": info["phase"] > i for i in range(len(self.subgoals))}

    def success(self, view, info):
        return info["phase"] >= len(self.subgoals)


def check_subgoals(subgoals: tuple[Subgoal, ...], props: tuple[str, ...]) -> None:
    """A UserError unless 1..MAX_SUBGOALS sub-goals, each about a prop the scene holds."""
    if not 1 <= len(subgoals) <= MAX_SUBGOALS:
        raise UserError(f"a sequence has 1 to {MAX_SUBGOALS} sub-goals, got {len(subgoals)}")
    needs = {"seated": "chair", "touch": "target", "on_marker": "marker", "door": "door"}  # else the goal's own prop
    for goal in subgoals:
        prop = needs.get(goal.kind, goal.prop)
        if prop is not None and prop not in props:
            raise UserError(f"sub-goal {goal.kind!r} ({goal.clause!r}) needs a {prop} in the scene; it has {list(props)}")


@functools.cache
def seated_qpos() -> tuple[float, ...]:
    """The robot's qpos [26] at the sit clip's last frame: seated on the chair scene's chair, facing +x (read on
    first use: importing the task library reads no files)."""
    from metaworld_x.motion.clip import read_clip
    from metaworld_x.paths import MOTIONS_DIR

    clip = read_clip(MOTIONS_DIR / "sit.npz")
    return tuple(float(x) for x in (*clip.root_pos[-1], *clip.root_quat[-1], *clip.joint_pos[-1]))
