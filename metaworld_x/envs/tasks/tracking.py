"""Tracking: follow a retargeted reference clip, optionally while solving a task.

DeepMimic-style motion imitation on our H1: reference-state initialisation at
a random phase (and at phase 0 in a fraction of episodes), the next reference
frames in the robot's heading frame as targets, named `exp(-k·err)` terms, an
action-rate and a torque regulariser, and early termination on a fall or on
keypoint deviation.

With an `objective` (another task, e.g. Walk), its reward terms join in under
the prefix `task_`; imitation terms are weighted by `track_weight` and the
task's by `task_weight`, the paper's fixed-weight formulation. The trainer's
Lagrangian mode reads the parts separately from the metrics:
`imitation/reward` (the imitation terms normalised to [0, 1]),
`imitation/tracking_error` (metres) and `task/reward` (the objective's terms,
unweighted).

With `object_joint`, reference-state initialisation also puts that free
object (the box) where the clip has it (`reference.held_object`), and with
`scene_from_clip` the objective lays its props out along the clip's object
path (carry: the table where the clip sets the box down), so that following
the clip is also a way to solve the objective. With `clip_props`, reset also
sets the scene joints a clip records (`Clip.prop_qpos`: the box the push clip
has pushed, the door the door clip has opened) to the clip's state at the
start time, so that a late start does not begin inside a prop left where the
scene puts it.

Home starts (`home_start_fraction`) begin a share of episodes at rest in the
scene's home pose, the clip re-anchored onto the robot each step, as a router
runs an expert; handover starts (`handover_start_fraction`) are home starts
whose robot begins in another clip's state (`handover_clip`), as a router
hands an expert the robot that another has been driving.

Success: the episode reaches its time limit without early termination and,
with an objective, the objective's own success criterion holds.
"""

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from metaworld_x.envs import rotations
from metaworld_x.envs.observations import to_heading_frame
from metaworld_x.envs.physics_view import JointSlice, ViewLayout
from metaworld_x.envs.reference import (
    ReferenceFrame,
    ReferenceMotion,
    closest_frame_time,
    facing_forward,
    frame_at,
    from_clips,
    ground_pose,
    moved_on_ground,
    object_at,
    props_at,
    reanchor,
)
from metaworld_x.envs.state import PhysicsInit
from metaworld_x.envs.task import RewardScales, Task, TaskConfig, perturb_robot
from metaworld_x.errors import UserError
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.robot import JOINT_NAMES

END_EFFECTORS = ("left_foot", "right_foot", "left_hand", "right_hand")
# Keypoints that are sites; every other keypoint name is a body.
SITE_KEYPOINTS = frozenset({"head", "left_foot", "right_foot", "left_hand", "right_hand"})
TASK_PREFIX = "task_"


@dataclass(frozen=True)
class TrackingRewards(RewardScales):
    """Scales of the imitation terms (each in [0, 1]) and of the regularisers (each <= 0)."""

    joint_pos: float = 0.3
    joint_vel: float = 0.05
    keypoint_pos: float = 0.2
    root_pos: float = 0.1
    root_orientation: float = 0.1
    end_effector: float = 0.15
    com: float = 0.1
    object_pos: float = 0.2
    """The `object_joint` object (the box) where the clip has it; scored only by tasks that track one. Without it
    a carry policy scored full "hold" with a paddle resting on the box's top and never lifted it."""
    object_rot: float = 0.1
    """The object turned as the clip has it. Position alone let the carry expert roll the box onto its side as it
    set it down (the clip keeps it upright), which puts its centre in the same place."""
    action_rate: float = 0.02
    torque: float = 0.01


IMITATION_TERMS = ("joint_pos", "joint_vel", "keypoint_pos", "root_pos", "root_orientation", "end_effector", "com")
OBJECT_TERMS = ("object_pos", "object_rot")  # imitation terms of a task with an `object_joint` only


@dataclass(frozen=True)
class TrackingConfig(TaskConfig):
    clips: tuple[str, ...] = ("walk",)
    """Reference clips: names in assets/motions (walk -> walk.npz) or .npz paths; several = multi-clip mode."""
    loop: bool | None = None
    """Repeat the clips with their root moved on each cycle; None: as each clip's metadata says."""
    face_forward: bool = False
    """Turn and move each clip to start at the origin and travel along +x, where the task scenes put their props."""
    episode_length: int = 500
    """Control steps per episode."""
    phase_zero_fraction: float = 0.2
    """Share of episodes that start at the clip's first frame; the rest start at a uniformly random time."""
    start_window: float | None = None
    """Random starts fall in each clip's first this many seconds; None: anywhere in the clip. A curriculum knob for a
    clip whose hard part is its beginning (run_start: rest, a walk, the speed-up, then 18 s of one sprint)."""
    home_start_time: float | None = None
    """Clip time (s) at which a home start (and a router) begins the first clip; None: the frame whose pose is
    closest to home. A clip made to start from rest says 0: run_start's closest frame lies mid-speed-up (1.24 s),
    so home starts there had to stand still into a 3 m/s reference and ended in 29 steps."""
    home_start_fraction: float = 0.0
    """Share of episodes that start from the scene's home pose at rest, on the first clip at the time whose pose is
    closest to home, the clip placed as `home_anchor` says (by default re-anchored onto the robot's root every
    step: how a router runs an expert)."""
    home_anchor: Literal["every_step", "once"] = "every_step"
    """Where a home start's clip stands. every_step: re-anchored onto the robot's root at every step, as a router
    runs an expert, so that where the robot has got to never counts, only its pose, height and speed. once: moved
    once, rigidly, so that its home-start frame stands where the home pose does; from there the robot must keep to
    it as a clip start must. Re-anchored, a get-down that stays put under a task paying for forward speed (crawl's)
    lets home starts drift forward for free while clip starts end at the deviation limit; anchored once, both kinds
    of start ask the same."""
    future_steps: tuple[int, ...] = (1, 5)
    """Control steps ahead of each reference frame in the observation."""
    joint_pos_k: float = 10.0
    """exp(-k·mean squared joint angle error (rad²))."""
    joint_vel_k: float = 0.1
    """exp(-k·mean squared joint speed error ((rad/s)²))."""
    keypoint_pos_k: float = 100.0
    """exp(-k·mean squared keypoint error (m²)), keypoints relative to the root."""
    root_pos_k: float = 10.0
    """exp(-k·squared root position error (m²))."""
    root_orientation_k: float = 5.0
    """exp(-k·squared root orientation error (rad²))."""
    end_effector_k: float = 40.0
    """exp(-k·mean squared hand and foot error (m²)), relative to the root."""
    com_k: float = 2.0
    """exp(-k·squared error of the centre of mass velocity against the reference root velocity ((m/s)²))."""
    object_pos_k: float = 10.0
    """exp(-k·squared distance (m²) of the `object_joint` object from the clip's): 0.41 at 0.3 m."""
    object_rot_k: float = 2.0
    """exp(-k·squared angle (rad²) between the object's orientation and the clip's): 0.29 at 45°, 0.007 at 90°."""
    max_deviation: float = 0.5
    """Early termination when a keypoint or the `object_joint` object is farther than this (m) from its reference."""
    handover_clip: str | None = None
    """A clip that another expert plays before a router hands over to this one: handover starts begin in its state.
    The stand expert fell after fetch's router handed it the robot as carry set the box down, bent over the table
    with its arms out (1, 2 and 4 of 10 episodes over three wordings); it had only started from home
    and its own clips."""
    handover_window: tuple[float, float] = (0.0, 0.0)
    """Clip times (s) of `handover_clip` between which a handover start takes the robot's state."""
    handover_start_fraction: float = 0.0
    """Share of episodes that start in `handover_clip`'s state (pose and velocities, with reset noise) at a random
    time in `handover_window`, placed where and facing as the home pose is, and otherwise run as a home start:
    the first clip from its home start time, re-anchored, under `home_max_deviation`."""
    handover_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Largest |dx|, |dy| (m, in the home pose's frame) and |dyaw| (rad) of a uniform random shift of the spot a
    handover start is moved onto: the expert before stops the robot only roughly where a chain asks (a walk
    hands over anywhere within its arrival radius, still moving), so the next expert must start from near there."""
    handover_in_place: bool = False
    """Begin handover starts where `handover_clip` has the robot, in the scene's frame (the sit clip ends on the chair
    scene's seat, where a rise expert takes over), instead of moved onto the home pose's spot and heading."""
    home_max_deviation: float = 1.0
    """The same limit in home-start episodes: they begin up to ~0.6 m from the clip's pose in some keypoint, and
    the router they prepare for has no such limit. At 0.5 m every sit home start ended just before sitting down,
    so the expert never learned to sit from home."""
    fall_margin: float = 0.3
    """Early termination ("fall") when the root is this much (m) lower than the reference's."""
    track_weight: float = 1.0
    """Weight of the imitation terms in the reward (the paper's w_track)."""
    task_weight: float = 1.0
    """Weight of the objective's terms in the reward (the paper's w_task)."""
    object_joint: str | None = None
    """A free joint of the scene ("box") that reset puts where the clip has its object; None: where the scene does."""
    max_object_tilt_deg: float | None = None
    """Early termination (a deviation) when the `object_joint` object's up axis turns more than this (degrees) from
    the clip's. A carried box that pitches about the line between the palms lands on its side at the set-down
    but costs only the `level` reward there, seconds after the tilt began; ending
    the episode at the tilt charges it where it happens. None: no limit. Yaw is free."""
    scene_from_clip: bool = False
    """Lay the objective's props out along the clip's object path (its `scene_along`); needs one clip with an object."""
    clip_props: bool = False
    """Reset sets the scene joints the clips record (`Clip.prop_qpos`: a pushed box, a door's hinge) as the clip has them; False: as the scene does."""
    rewards: TrackingRewards = field(default_factory=TrackingRewards)

    @property
    def moves_props(self) -> bool:
        """Whether reset puts a box or props where the clip has them (object_joint, clip_props)."""
        return bool(self.object_joint or self.clip_props)

    @property
    def plays_in_place(self) -> bool:
        """Whether the clip is tied to where the scene's props stand, and so is shown where it has them, never
        re-anchored onto the robot: it moves them (a box, a door), or it starts where another clip leaves the robot
        on one (rise, from the seat sit ends on). Re-anchored at every step, the rise clip's slide forward on the
        seat was never ahead of the robot: its expert stood the pelvis up against the chair's back instead."""
        return self.moves_props or self.handover_in_place

    @property
    def home_starts_possible(self) -> bool:
        """Whether an episode may start from the home pose. With props from the clip, only at a named
        `home_start_time`: reset puts them in the clip's state then (the box untouched on the floor) around the
        robot at home; the frame closest to home might hold the box in the air, in hands that are not there."""
        return not self.moves_props or self.home_start_time is not None

    def __post_init__(self):
        super().__post_init__()
        if not self.clips:
            raise UserError("a tracking task needs at least one clip")
        if not 0 <= self.phase_zero_fraction <= 1:
            raise UserError(f"phase_zero_fraction must be in [0, 1], got {self.phase_zero_fraction}")
        if self.start_window is not None and self.start_window <= 0:
            raise UserError(f"start_window must be > 0 s (or None for the whole clip), got {self.start_window}")
        if any(s < 1 for s in self.future_steps):
            raise UserError(f"future_steps must be positive, got {self.future_steps}")
        if self.home_start_time is not None and self.home_start_time < 0:
            raise UserError(f"home_start_time must be >= 0 s (or None for the frame closest to home), got {self.home_start_time}")
        if not 0 <= self.home_start_fraction <= 1:
            raise UserError(f"home_start_fraction must be in [0, 1], got {self.home_start_fraction}")
        if not 0 <= self.handover_start_fraction <= 1 - self.home_start_fraction:
            raise UserError(f"handover_start_fraction must be in [0, 1 - home_start_fraction], got"
                            f" {self.handover_start_fraction} with home_start_fraction {self.home_start_fraction}")
        if self.handover_start_fraction and self.handover_clip is None:
            raise UserError("handover_start_fraction needs handover_clip: the clip whose states handover starts begin in")
        if self.handover_start_fraction and not self.home_starts_possible:
            raise UserError("handover starts begin in another expert's pose on the spot home starts use, with the"
                            " props as a home start has them: with object_joint or clip_props, set home_start_time")
        if len(self.handover_offset) != 3 or any(not d >= 0 for d in self.handover_offset):
            raise UserError(f"handover_offset must be (dx, dy, dyaw) with each >= 0, got {self.handover_offset}")
        object.__setattr__(self, "handover_offset", tuple(float(d) for d in self.handover_offset))  # JSON gives lists
        if len(self.handover_window) != 2:
            raise UserError(f"handover_window must be (start, end) in seconds, got {self.handover_window}")
        object.__setattr__(self, "handover_window", tuple(float(t) for t in self.handover_window))  # JSON gives lists
        start, end = self.handover_window
        if not 0 <= start <= end:
            raise UserError(f"handover_window must be (start, end) with 0 <= start <= end (s), got {self.handover_window}")
        if self.home_anchor not in ("every_step", "once"):
            raise UserError(f"home_anchor must be 'every_step' (a router's re-anchoring) or 'once', not {self.home_anchor!r}")
        if self.max_deviation <= 0 or self.home_max_deviation <= 0:
            raise UserError(f"max_deviation and home_max_deviation must be > 0 m, got {self.max_deviation}, {self.home_max_deviation}")
        if self.max_object_tilt_deg is not None:
            if self.object_joint is None:
                raise UserError("max_object_tilt_deg limits the tracked object's tilt: set object_joint too, or leave it None")
            if not 0 < self.max_object_tilt_deg < 180:
                raise UserError(f"max_object_tilt_deg must lie in (0, 180) degrees, got {self.max_object_tilt_deg}")
        if self.home_start_fraction and not self.home_starts_possible:
            raise UserError(
                "home_start_fraction with object_joint or clip_props needs home_start_time: a home start puts the"
                " props in the clip's state at that time, around the robot in its home pose, so name a time the"
                " robot can start from there (the props untouched), or set home_start_fraction to 0"
            )
        if self.scene_from_clip and len(self.clips) != 1:
            raise UserError(f"scene_from_clip lays one scene out along one clip; got {len(self.clips)} clips")


def clip_path(name: str) -> Path:
    """A clip name in the shipped library, or a path to an .npz."""
    path = Path(name)
    if path.suffix == ".npz":
        return path
    return MOTIONS_DIR / f"{name}.npz"


def clip_fingerprints(config: TrackingConfig) -> dict[str, str]:
    """{clip: `Clip.fingerprint`} of every clip a task with `config` reads (its clips and its handover clip). A
    trained expert's figures hold for these versions only: the clip's duration alone is in every observation (the
    phase), and lengthening crawl_get_down from 21 s to 25 s, its first 21 s unchanged, moved the shipped crawl
    expert's success from home from 0/10 to 3/10."""
    from metaworld_x.motion.clip import read_clip

    names = [*config.clips, *([config.handover_clip] if config.handover_clip else [])]
    return {name: read_clip(clip_path(name)).fingerprint for name in names}


def _robot_in(home: PhysicsInit, frame: ReferenceFrame) -> PhysicsInit:
    """`home` with the robot's root and joints (positions and velocities) set to the reference `frame`'s."""
    n = len(JOINT_NAMES)
    qpos = home.qpos.at[:3].set(frame.root_pos).at[3:7].set(frame.root_quat).at[7 : 7 + n].set(frame.joint_pos)
    qvel = home.qvel.at[:3].set(frame.root_lin_vel).at[3:6].set(frame.root_ang_vel).at[6 : 6 + n].set(frame.joint_vel)
    return home.replace(qpos=qpos, qvel=qvel)


@dataclass(frozen=True)
class Tracking(Task):
    """Follow reference clips (see the module docstring)."""

    objective: Task | None = None

    name = "tracking"
    termination_reasons = ("fall", "deviation")
    metric_names = ("imitation/reward", "imitation/tracking_error", "task/reward")
    Config = TrackingConfig

    def __post_init__(self):
        super().__post_init__()
        if self.objective is not None and self.objective.config.frame_skip != self.config.frame_skip:
            raise UserError("a tracking task and its objective must share frame_skip")
        if self.config.scene_from_clip and not hasattr(self.objective, "scene_along"):
            raise UserError(
                f"scene_from_clip needs an objective that lays its scene out along a clip (carry does);"
                f" {self.objective.name if self.objective else 'pure tracking'} does not"
            )
        if self.config.handover_start_fraction > 0:
            _ = self.handover_reference  # a missing clip or a window past its end is told now, not at the first reset

    # ---- scene and view ------------------------------------------------------

    @property
    def scene(self) -> str:  # type: ignore[override]
        return self.objective.scene if self.objective is not None else "floor"

    @property
    def variant(self) -> str:  # type: ignore[override]
        return self.objective.variant if self.objective is not None else "h1"

    @property
    def bodies(self) -> tuple[str, ...]:  # type: ignore[override]
        own = tuple(n for n in self.reference.keypoint_names if n not in SITE_KEYPOINTS)
        return own + (self.objective.bodies if self.objective else ())

    @property
    def sites(self) -> tuple[str, ...]:  # type: ignore[override]
        own = tuple(n for n in self.reference.keypoint_names if n in SITE_KEYPOINTS)
        return own + (self.objective.sites if self.objective else ())

    @property
    def joints(self) -> tuple[str, ...]:  # type: ignore[override]
        own = (self.config.object_joint,) if self.config.object_joint else ()
        props = tuple(name for name, _ in self.reference.prop_joints) if self.config.clip_props else ()
        return tuple(dict.fromkeys((self.objective.joints if self.objective else ()) + own + props))

    def build_spec(self, robot_path=None):
        """The objective's scene; with `scene_from_clip`, its props laid out along the clip's object path."""
        if not self.config.scene_from_clip:
            return super().build_spec(robot_path)
        from metaworld_x.envs.sensors import add_view_sensors
        from metaworld_x.scene import build_scene

        ref = self._reference_with_object()
        path = np.asarray(ref.object_pos)[0, : np.asarray(ref.num_frames)[0]]
        spec = build_scene(self.objective.scene_along(path), self.variant, robot_path)
        add_view_sensors(spec)
        return spec

    @cached_property
    def reference(self) -> ReferenceMotion:
        from metaworld_x.motion.clip import load_clip

        clips = [load_clip(clip_path(name)) for name in self.config.clips]
        if self.config.face_forward:
            clips = [facing_forward(c) for c in clips]
        loop = [self.config.loop if self.config.loop is not None else bool(c.info.get("loop", False)) for c in clips]
        return from_clips(clips, loop)

    @cached_property
    def handover_reference(self) -> ReferenceMotion | None:
        """`handover_clip` as a one-clip reference, checked to hold `handover_window`; None without one."""
        from metaworld_x.motion.clip import load_clip

        if self.config.handover_clip is None:
            return None
        clip = load_clip(clip_path(self.config.handover_clip))
        if self.config.handover_window[1] > clip.duration:
            raise UserError(f"handover_window {self.config.handover_window} ends after {self.config.handover_clip}"
                            f" does ({clip.duration:.2f} s); pick times within the clip")
        return from_clips([clip], [False])

    def _reference_with_object(self) -> ReferenceMotion:
        """The reference, checked to carry an object pose in every clip."""
        ref = self.reference
        missing = [c for c, has in zip(self.config.clips, np.asarray(ref.has_object)) if not has]
        if missing:
            raise UserError(
                f"clip(s) {', '.join(missing)} have no object pose, which object_joint and scene_from_clip need"
            )
        return ref

    @cached_property
    def _object(self) -> JointSlice | None:
        """Where `config.object_joint` sits in qpos and qvel (the robot comes first: any H1 model agrees)."""
        name = self.config.object_joint
        if name is None:
            return None
        self._reference_with_object()
        model = self.build_model()
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) < 0:
            raise UserError(f"object_joint {name!r}: the {self.scene} scene has no joint of that name")
        joint = ViewLayout.from_model(model, joints=(name,)).joint(name)
        if (joint.qpos_size, joint.qvel_size) != (7, 6):
            raise UserError(f"object_joint {name!r} must be a free joint, to take the clip's object pose")
        return joint

    @cached_property
    def _props(self) -> tuple[JointSlice, ...]:
        """Where each joint of `reference.prop_joints` sits in qpos and qvel, when `config.clip_props` is on."""
        if not self.config.clip_props:
            return ()
        recorded = self.reference.prop_joints
        if not recorded:
            raise UserError(f"clip_props: clip(s) {', '.join(self.config.clips)} record no props (no prop_qpos)")
        if self.config.object_joint in dict(recorded):
            raise UserError(
                f"{self.config.object_joint!r} is both object_joint and a prop the clip records; use one of them"
            )
        model = self.build_model()
        missing = [n for n, _ in recorded if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) < 0]
        if missing:
            raise UserError(f"clip_props: the {self.scene} scene has no joint(s) {missing}, which the clip moves")
        layout = ViewLayout.from_model(model, joints=tuple(n for n, _ in recorded))
        slices = tuple(layout.joint(n) for n, _ in recorded)
        wrong = [(j.name, size, j.qpos_size) for j, (_, size) in zip(slices, recorded) if j.qpos_size != size]
        if wrong:
            raise UserError(f"clip_props: (joint, clip's qpos size, scene's) differ: {wrong}")
        return slices

    @property
    def control_dt(self) -> float:
        return 0.002 * self.config.frame_skip

    # ---- rewards -------------------------------------------------------------

    @property
    def imitation_terms(self) -> tuple[str, ...]:
        """The imitation terms scored: the object's only where the task tracks one (`object_joint`)."""
        return IMITATION_TERMS + (OBJECT_TERMS if self.config.object_joint else ())

    @property
    def reward_names(self) -> tuple[str, ...]:
        own = tuple(n for n in super().reward_names if n in self.imitation_terms or n not in OBJECT_TERMS)
        extra = tuple(TASK_PREFIX + n for n in self.objective.reward_names) if self.objective else ()
        return own + extra

    def reward_terms(self, view, info, action):
        scales = self.config.rewards
        ref = self._frame(view, info)
        terms = {}
        for name in self.imitation_terms + ("action_rate", "torque"):
            weight = self.config.track_weight if name in self.imitation_terms else 1.0
            value = getattr(self, f"_reward_{name}")(view, info, action, ref)
            terms[name] = weight * getattr(scales, name) * jnp.asarray(value, jnp.float32)
        if self.objective is not None:
            for name, value in self.objective.reward_terms(view, info, action).items():
                terms[TASK_PREFIX + name] = self.config.task_weight * value
        return terms

    def _frame(self, view, info) -> ReferenceFrame:
        """The reference now, placed as `_placement` says."""
        return self._placement(view, info)(frame_at(self.reference, info["clip"], info["ref_time"]))

    def _placement(self, view, info):
        """frame -> frame: where the clip has it; in a home-start episode, re-anchored onto the robot's root now.

        The re-anchoring is the router's (`reference.reanchor`), step by step, so
        a home-start episode is what an expert lives through inside a router: its
        clip always starts from where it stands, and only its pose, height and
        speed can be off, never where it has got to. Not for a clip played in
        place (`TrackingConfig.plays_in_place`): its props lie where the clip has
        them, and a router plays it so, in a scene laid out as its own (`clip_in_place`)."""
        if self.config.plays_in_place:
            return lambda frame: frame
        if self.config.home_anchor == "once":
            source, destination = self._home_anchor
            anchor = lambda frame: moved_on_ground(frame, source, destination)  # noqa: E731
        else:
            now = frame_at(self.reference, info["clip"], info["ref_time"])
            anchor = lambda frame: reanchor(frame, now, view.root_pos, view.root_quat)  # noqa: E731

        def place(frame):
            anchored = anchor(frame)
            return jax.tree.map(lambda a, b: jnp.where(info["from_home"], a, b), anchored, frame)

        return place

    def _keypoints(self, view):
        """[K, 3] the robot's keypoints in the reference's order."""
        return jnp.stack([
            view.site(n) if n in SITE_KEYPOINTS else view.body(n) for n in self.reference.keypoint_names
        ])

    def keypoint_errors(self, view, info):
        """[K] distance (m) of each keypoint (`reference.keypoint_names`) from the reference now, relative to the roots."""
        return self._relative_errors(view, self._frame(view, info))

    def _relative_errors(self, view, ref: ReferenceFrame):
        """[K] distance of each keypoint from its reference, both taken relative to their roots."""
        robot = self._keypoints(view) - view.root_pos
        target = ref.keypoint_pos - ref.root_pos
        return jnp.linalg.norm(robot - target, axis=-1)

    def _reward_joint_pos(self, view, info, action, ref):
        return jnp.exp(-self.config.joint_pos_k * jnp.mean((view.robot_qpos[7:] - ref.joint_pos) ** 2))

    def _reward_joint_vel(self, view, info, action, ref):
        return jnp.exp(-self.config.joint_vel_k * jnp.mean((view.robot_qvel[6:] - ref.joint_vel) ** 2))

    def _reward_keypoint_pos(self, view, info, action, ref):
        return jnp.exp(-self.config.keypoint_pos_k * jnp.mean(self._relative_errors(view, ref) ** 2))

    def _reward_root_pos(self, view, info, action, ref):
        return jnp.exp(-self.config.root_pos_k * jnp.sum((view.root_pos - ref.root_pos) ** 2))

    def _reward_root_orientation(self, view, info, action, ref):
        angle = rotations.angle_between(view.root_quat, ref.root_quat)
        return jnp.exp(-self.config.root_orientation_k * angle**2)

    def _reward_end_effector(self, view, info, action, ref):
        names = self.reference.keypoint_names
        index = jnp.asarray([names.index(n) for n in END_EFFECTORS if n in names])
        return jnp.exp(-self.config.end_effector_k * jnp.mean(self._relative_errors(view, ref)[index] ** 2))

    def _reward_com(self, view, info, action, ref):
        return jnp.exp(-self.config.com_k * jnp.sum((view.com_vel - ref.root_lin_vel) ** 2))

    def _reward_object_pos(self, view, info, action, ref):
        target = object_at(self.reference, info["clip"], info["ref_time"]).pos
        error = view.joint_qpos(self.config.object_joint)[:3] - target
        return jnp.exp(-self.config.object_pos_k * jnp.sum(error**2))

    def _reward_object_rot(self, view, info, action, ref):
        target = object_at(self.reference, info["clip"], info["ref_time"]).quat
        angle = rotations.angle_between(view.joint_qpos(self.config.object_joint)[3:7], target)
        return jnp.exp(-self.config.object_rot_k * angle**2)

    def _reward_action_rate(self, view, info, action, ref):
        return -jnp.mean((action - info["last_action"]) ** 2)

    def _reward_torque(self, view, info, action, ref):
        return -jnp.mean((view.actuator_force * 1e-2) ** 2)

    def account(self, view, info, terms):
        """Imitation and task parts of this step, for the Lagrangian trainer and for success."""
        scales = self.config.rewards
        total_scale = sum(getattr(scales, n) for n in self.imitation_terms) * self.config.track_weight
        imitation = sum(terms[n] for n in self.imitation_terms) / total_scale
        task = sum((terms[n] for n in terms if n.startswith(TASK_PREFIX)), jnp.zeros((), jnp.float32))
        task = task / self.config.task_weight
        error = jnp.mean(self.keypoint_errors(view, info))
        info = {**info, "task_return": info["task_return"] + task}
        return info, {"imitation/reward": imitation, "imitation/tracking_error": error, "task/reward": task}

    # ---- episode start -------------------------------------------------------

    @staticmethod
    def clip_info(clip, time) -> dict:
        """The episode variables of a start on clip index `clip` at `time` (s), with the clip where it is."""
        return {"clip": jnp.asarray(clip, jnp.int32), "ref_time": jnp.asarray(time, jnp.float32),
                "from_home": jnp.zeros((), bool),
                "task_return": jnp.zeros((), jnp.float32)}

    def home_start_time(self, home_joints) -> float:
        """The first clip's time at which an episode starting in pose `home_joints` [19] begins: `home_start_time`,
        or the frame closest to that pose. Home starts and a router's clock for this expert both start here."""
        if self.config.home_start_time is not None:  # plain floats: this may first run while reset is traced
            return float(self.config.home_start_time)
        return closest_frame_time(self.reference, home_joints, 0)

    @cached_property
    def _home_qpos(self) -> np.ndarray:
        """The scene's home keyframe (robot first), where home and handover starts put the robot; compiled once."""
        return self.build_model().key_qpos[0].copy()

    @cached_property
    def _home_start(self) -> float:
        """Where a home start begins the first clip (the only one home starts use), for the scene's home pose."""
        return self.home_start_time(self._home_qpos[7 : 7 + len(JOINT_NAMES)])

    @cached_property
    def _home_anchor(self) -> tuple[np.ndarray, np.ndarray]:
        """(source, destination) ground poses [3] of home_anchor "once": the first clip's at the home start time,
        and the home pose's, where home and handover starts put the robot (before reset noise)."""
        key = self._home_qpos
        with jax.ensure_compile_time_eval():  # constants, though first asked for while a step is traced
            frame = frame_at(self.reference, 0, jnp.float32(self._home_start))
            poses = ground_pose(frame.root_pos, frame.root_quat), ground_pose(jnp.asarray(key[:3]), jnp.asarray(key[3:7]))
        return tuple(np.asarray(p, np.float32) for p in poses)

    def reset_info(self, rng):
        k_clip, k_phase, k_zero, k_home, k_objective = jax.random.split(rng, 5)
        ref = self.reference
        clip = jax.random.randint(k_clip, (), 0, ref.num_clips)
        latest = ref.duration(clip) if self.config.start_window is None else jnp.minimum(ref.duration(clip), self.config.start_window)
        start = jax.random.uniform(k_phase, (), minval=0.0, maxval=latest)
        start = jnp.where(jax.random.uniform(k_zero) < self.config.phase_zero_fraction, 0.0, start)
        info = self.clip_info(clip, start)
        home, handover = self.config.home_start_fraction, self.config.handover_start_fraction
        if home + handover > 0:
            # a router drives a multi-clip expert by its first clip, from that clip's frame closest to home; a
            # handover start is a home start whose robot begins in another clip's state
            draw = jax.random.uniform(k_home)
            from_home = draw < home + handover
            clip = jnp.where(from_home, 0, clip)
            start = jnp.where(from_home, jnp.float32(self._home_start), start)
            info = {**info, "clip": clip, "ref_time": start, "from_home": from_home}
        if handover > 0:
            # fold_in, not one more split: the streams of tasks without handover starts stay as they were
            handover_time = jax.random.uniform(jax.random.fold_in(k_home, 1), (), minval=self.config.handover_window[0],
                                               maxval=self.config.handover_window[1])
            info["handover_time"] = jnp.where((draw >= home) & from_home, handover_time, -1.0)
            if any(self.config.handover_offset):  # drawn only where asked for: other tasks' streams stay as they were
                reach = jnp.asarray(self.config.handover_offset, jnp.float32)
                info["handover_offset"] = jax.random.uniform(jax.random.fold_in(k_home, 2), (3,), minval=-reach, maxval=reach)
        if self.objective is not None:
            info.update(self.objective.reset_info(k_objective))
        return info

    def reset_physics(self, rng, home: PhysicsInit, info) -> PhysicsInit:
        """Reference-state initialisation: the robot (and `object_joint`, and with `clip_props` the props) in the
        clip's state at the start time; or, for a home start, the robot in the scene's home pose (with the task's
        reset noise) at rest, or for a handover start in `handover_clip`'s state."""
        on_clip = _robot_in(home, frame_at(self.reference, info["clip"], info["ref_time"]))
        qpos, qvel = on_clip.qpos, on_clip.qvel
        if self.config.home_start_fraction + self.config.handover_start_fraction > 0:
            rest = home
            if self.config.handover_start_fraction > 0:
                # info from `clip_info` (a start on the clip, as tests and replays make it) has no handover time
                rest = self._handover_state(home, info.get("handover_time", jnp.float32(-1.0)),
                                            info.get("handover_offset", jnp.zeros(3, jnp.float32)))
            rest = perturb_robot(rng, rest, self.config.reset_noise)
            qpos = jnp.where(info["from_home"], rest.qpos, qpos)
            qvel = jnp.where(info["from_home"], rest.qvel, qvel)
        if self._object is not None:
            obj = object_at(self.reference, info["clip"], info["ref_time"])
            q, v = self._object.qpos_start, self._object.qvel_start
            qpos = qpos.at[q : q + 3].set(obj.pos).at[q + 3 : q + 7].set(obj.quat)
            qvel = qvel.at[v : v + 3].set(obj.lin_vel).at[v + 3 : v + 6].set(obj.ang_vel)
        if self._props:
            props = props_at(self.reference, info["clip"], info["ref_time"])
            q = v = 0  # each joint's place in the clip's prop_qpos and prop_qvel
            for joint in self._props:
                qpos = qpos.at[joint.qpos_start : joint.qpos_start + joint.qpos_size].set(props.qpos[q : q + joint.qpos_size])
                qvel = qvel.at[joint.qvel_start : joint.qvel_start + joint.qvel_size].set(props.qvel[v : v + joint.qvel_size])
                q, v = q + joint.qpos_size, v + joint.qvel_size
        return home.replace(qpos=qpos, qvel=qvel)

    def _handover_state(self, home: PhysicsInit, handover_time, offset) -> PhysicsInit:
        """The home state, or, at a `handover_time` >= 0, the robot in `handover_clip`'s state then, moved onto the
        home pose's spot and heading shifted by `offset` [3] (dx, dy in the home pose's frame, dyaw) unless
        `handover_in_place` (its height, pose and velocities as the clip has them)."""
        frame = frame_at(self.handover_reference, 0, jnp.maximum(handover_time, 0.0))
        if not self.config.handover_in_place:
            spot = ground_pose(home.qpos[:3], home.qpos[3:7])
            c, s = jnp.cos(spot[2]), jnp.sin(spot[2])
            spot = spot + jnp.stack([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1], offset[2]])
            frame = moved_on_ground(frame, ground_pose(frame.root_pos, frame.root_quat), spot)
        handed_over = _robot_in(home, frame)
        return jax.tree.map(lambda a, b: jnp.where(handover_time >= 0, a, b), handed_over, home)

    # ---- during the episode --------------------------------------------------

    def advance(self, view, info):
        info = {**info, "ref_time": info["ref_time"] + self.control_dt}
        return self.objective.advance(view, info) if self.objective is not None else info

    def features(self, view, info):
        parts = [self.reference_features(view, info["clip"], info["ref_time"], self._placement(view, info))]
        if self.objective is not None:
            parts.append(self.objective.features(view, info))
        return jnp.concatenate(parts)

    def reference_features(self, view, clip, time, place=None):
        """[2 + n_future·(26 + 3K)] the phase, then each future reference frame relative to the robot's heading frame.

        `place(frame) -> frame`, if given, moves each future frame first (the
        router re-anchors a clip to wherever the robot is in its scene).
        """
        ref = self.reference
        phase = jnp.clip(time / jnp.maximum(ref.duration(clip), 1e-6), 0.0, None)
        parts = [jnp.sin(2 * jnp.pi * phase)[None], jnp.cos(2 * jnp.pi * phase)[None]]
        for steps in self.config.future_steps:
            target = frame_at(ref, clip, time + steps * self.control_dt)
            if place is not None:
                target = place(target)
            keypoints = to_heading_frame(target.keypoint_pos - view.root_pos, view.root_quat)
            parts += [
                target.joint_pos,
                to_heading_frame(target.root_pos - view.root_pos, view.root_quat),
                target.root_quat,
                keypoints.reshape(-1),
            ]
        return jnp.concatenate(parts)

    def privileged_features(self, view, info):
        return self.objective.privileged_features(view, info) if self.objective else jnp.zeros(0, jnp.float32)

    def _terminate_fall(self, view, info):
        return view.root_pos[2] < self._frame(view, info).root_pos[2] - self.config.fall_margin

    def _terminate_deviation(self, view, info):
        ref = self._frame(view, info)
        worst = jnp.max(jnp.linalg.norm(self._keypoints(view) - ref.keypoint_pos, axis=-1))
        limit = jnp.where(info["from_home"], self.config.home_max_deviation, self.config.max_deviation)
        if self._object is None:
            return worst > limit
        # a dropped box ends the episode like a lost foot; one tipped past max_object_tilt_deg does too
        target = object_at(self.reference, info["clip"], info["ref_time"])
        box = view.joint_qpos(self.config.object_joint)
        worst = jnp.maximum(worst, jnp.linalg.norm(box[:3] - target.pos))
        return (worst > limit) | self._object_tipped(box[3:7], target.quat)

    def _object_tipped(self, quat, target_quat):
        """Whether the object's up axis is more than `max_object_tilt_deg` from the clip's (yaw is free)."""
        if self.config.max_object_tilt_deg is None:
            return jnp.asarray(False)
        up = jnp.array([0.0, 0.0, 1.0])
        cos = jnp.dot(rotations.rotate(quat, up), rotations.rotate(target_quat, up))
        return cos < jnp.cos(jnp.deg2rad(self.config.max_object_tilt_deg))

    def success(self, view, info):
        alive_to_end = info["step"] >= self.config.episode_length
        if self.objective is None:
            return alive_to_end
        objective_info = {**info, "episode_return": info["task_return"]}
        if self.objective.success_bar is not None:
            # the bar is on a full-length episode's return; scale it to this episode length
            bar = self.objective.success_bar * self.config.episode_length / self.objective.config.episode_length
            return alive_to_end & (info["task_return"] >= bar)
        return alive_to_end & self.objective.success(view, objective_info)
