"""The router's environment: a task's scene plus every installed expert's own observation.

`ExpertScene` wraps a task (stand, sit, fetch, ...): rewards, termination,
success and the router's observation ("state": proprioception + the task's
features) are the task's own. On top, each step's observation carries
"expert/<name>" for every expert, rebuilt by `SkillObservation` from the same
view with that expert's reference clock (`info["skill_time"]`). Both
backends run it unchanged: it is an ordinary Task.
"""

from dataclasses import dataclass, replace
from pathlib import Path

import jax
import jax.numpy as jnp

from metaworld_x.envs.observations import proprioception
from metaworld_x.envs.task import Task
from metaworld_x.envs.tasks.tracking import SITE_KEYPOINTS
from metaworld_x.errors import UserError
from metaworld_x.json_file import read_json_object
from metaworld_x.robot import JOINT_NAMES
from metaworld_x.routing.skill_observation import (
    SkillObservation,
    check_layout,
    clip_in_place,
    objects_present,
    steering_turn,
    tracking_obs_layout,
)

PROPRIOCEPTION_SIZE = 49  # qpos without root x, y (24) + qvel (25); checked against the model below


@dataclass(frozen=True)
class ExpertScene(Task):
    """`objective`'s episode, observed by the router and by each expert in `skills`."""

    objective: Task = None
    skills: tuple[SkillObservation, ...] = ()
    max_turn: float = 0.3
    """The most (rad) a steerable expert's clip is turned towards the objective's steering point (`steer_point`)."""
    restart_clocks: bool = False
    """Whether an expert's reference clock starts again from its start time each time it takes over as the dominant
    expert (`rollouts.take_over`): an expert chained after another starts its clip from the beginning, not from
    wherever the episode's clock has taken it. The observation then also carries "expert_fresh/<name>", the expert's
    observation with its clock at its start time."""
    state_features: int | None = None
    """Width the task's features in the router's observation are padded to (`padded_state`), so that one router
    reads every task's scene in one layout; None: the task's own width."""

    name = "expert_scene"

    def __post_init__(self):  # the objective's methods do the work, so the base checks do not apply
        if self.objective is None:
            raise UserError("an ExpertScene needs the task it runs")
        if self.config is None:
            object.__setattr__(self, "config", self.objective.config)

    # ---- the scene: the objective's, plus what the experts read -------------------

    @property
    def scene(self):  # type: ignore[override]
        return self.objective.scene

    @property
    def variant(self):  # type: ignore[override]
        return self.objective.variant

    def _gather(self, attribute: str, keypoint_kind) -> tuple[str, ...]:
        names = list(getattr(self.objective, attribute))
        for skill in self.skills:
            if keypoint_kind is not None:
                names += [n for n in skill.tracking.reference.keypoint_names if keypoint_kind(n)]
            if skill.objective_source in ("scene", "shared"):
                names += list(getattr(skill.objective, attribute))
        return tuple(dict.fromkeys(names))

    @property
    def bodies(self):  # type: ignore[override]
        return self._gather("bodies", lambda n: n not in SITE_KEYPOINTS)

    @property
    def sites(self):  # type: ignore[override]
        return self._gather("sites", lambda n: n in SITE_KEYPOINTS)

    @property
    def joints(self):  # type: ignore[override]
        return self._gather("joints", None)

    @property
    def termination_reasons(self):  # type: ignore[override]
        return self.objective.termination_reasons

    @property
    def metric_names(self):  # type: ignore[override]
        return self.objective.metric_names

    @property
    def success_bar(self):  # type: ignore[override]
        return self.objective.success_bar

    @property
    def expert_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    @property
    def action_gains(self) -> tuple[float, ...]:
        """[K] what each expert's action is multiplied by to be in the scene's action units (SkillObservation.action_gain)."""
        return tuple(s.action_gain for s in self.skills)

    # ---- delegated to the objective -------------------------------------------------

    @property
    def reward_names(self):
        return self.objective.reward_names

    def reward_terms(self, view, info, action):
        return self.objective.reward_terms(view, info, action)

    def reset_physics(self, rng, home, info):
        return self.objective.reset_physics(rng, home, info)

    def account(self, view, info, terms):
        return self.objective.account(view, info, terms)

    def terminations(self, view, info):
        return self.objective.terminations(view, info)

    def success(self, view, info):
        return self.objective.success(view, info)

    # ---- the experts' clocks and observations ----------------------------------------

    def reset_info(self, rng):
        keys = jax.random.split(rng, len(self.skills) + 1)
        info = dict(self.objective.reset_info(keys[0]))
        info["skill_time"] = jnp.asarray([s.start_time for s in self.skills], jnp.float32)
        info["skill_info"] = {s.name: s.reset_info(k) for s, k in zip(self.skills, keys[1:])}
        return info

    def advance(self, view, info):
        info = self.objective.advance(view, info)
        dt = jnp.asarray([s.tracking.control_dt for s in self.skills], jnp.float32)
        return {**info, "skill_time": info["skill_time"] + dt}

    def observe(self, view, info):
        obs = dict(self.objective.observe(view, info))
        if self.state_features is not None:
            features = obs["state"].shape[-1] - PROPRIOCEPTION_SIZE  # static: checked once, when the step is traced
            if features > self.state_features:
                raise UserError(f"task {self.objective.name!r} has {features} features in its router observation, more"
                                f" than the {self.state_features} the one router's layout holds; raise task_features")
            obs["state"] = padded_state(obs["state"], self.state_features)
        own = proprioception(view)
        turn, anchor = 0.0, None
        if hasattr(self.objective, "steer_point"):  # a sequence steers its locomotion experts to its sub-goals
            turn = steering_turn(view, *self.objective.steer_point(view, info), self.max_turn)
        if hasattr(self.objective, "clip_anchor"):  # and places an anchored expert's clip where its sub-goal says
            anchor = self.objective.clip_anchor(info)
        for i, skill in enumerate(self.skills):
            features = skill.features(view, info, info["skill_time"][i], info["skill_info"][skill.name], turn, anchor)
            obs[f"expert/{skill.name}"] = jnp.concatenate([own, features]).astype(jnp.float32)
            if self.restart_clocks:
                fresh = skill.features(view, info, jnp.float32(skill.start_time), info["skill_info"][skill.name], turn,
                                       anchor)
                obs[f"expert_fresh/{skill.name}"] = jnp.concatenate([own, fresh]).astype(jnp.float32)
        return obs

    @property
    def start_times(self) -> tuple[float, ...]:
        """[K] each expert's clock at the start of an episode, and when it takes over (restart_clocks)."""
        return tuple(s.start_time for s in self.skills)


def padded_state(state: jax.Array, width: int) -> jax.Array:
    """[..., 49 + f] -> [..., 49 + width]: zeros between the proprioception and the task's f features.

    Right-aligned, so a task's features keep their offset from the end, where a sequence's phase is read
    (`scripted.PHASE_SLICE`); the text embedding, not the column, says which task a feature belongs to."""
    features = state.shape[-1] - PROPRIOCEPTION_SIZE
    zeros = jnp.zeros(state.shape[:-1] + (width - features,), state.dtype)
    return jnp.concatenate([state[..., :PROPRIOCEPTION_SIZE], zeros, state[..., PROPRIOCEPTION_SIZE:]], axis=-1)


# ---- building it from the installed experts ---------------------------------------------


def load_expert_spec(directory: Path):
    """The ExpertSpec an expert was trained from: its shipped spec.json, else the current recipe."""
    from metaworld_x.experts.specs import EXPERTS, ExpertSpec

    directory = Path(directory)
    path = directory / "spec.json"
    if not path.is_file():
        if directory.name not in EXPERTS:
            raise UserError(f"expert {directory} has no spec.json and {directory.name!r} is not a known skill")
        return EXPERTS[directory.name], None
    record = read_json_object(path, "the expert's spec")
    spec = ExpertSpec(
        skill=record["skill"], description=record["description"], clips=tuple(record["clips"]),
        objective=record.get("objective"), loop=record.get("loop"), tracking=dict(record.get("tracking") or {}),
        objective_overrides=dict(record.get("objective_overrides") or {}),
    )
    return spec, record.get("action_scale")


def expert_obs_layout(name: str, policy_spec: dict, tracking, objective_size: int) -> list[list]:
    """The expert's recorded obs_layout, or one derived from its spec (experts shipped before layouts were recorded)."""
    layout = policy_spec.get("obs_layout") or tracking_obs_layout(tracking, PROPRIOCEPTION_SIZE, objective_size)
    return check_layout(name, layout, int(policy_spec["observation_size"]))


def _objective_size(tracking, observation_size: int) -> int:
    keypoints = len(tracking.reference.keypoint_names)
    reference = 2 + len(tracking.config.future_steps) * (19 + 3 + 4 + 3 * keypoints)
    size = observation_size - PROPRIOCEPTION_SIZE - reference
    if size < 0 or (tracking.objective is None and size):
        raise UserError(
            f"expert {tracking.config.clips}: its policy reads {observation_size} entries, which its tracking spec"
            f" cannot produce ({PROPRIOCEPTION_SIZE} proprioception + {reference} reference + objective)"
        )
    return size


def _training_start_features(tracking, size: int) -> tuple[float, ...]:
    """The objective's features at the start of a training episode (seed 0), for scenes without its objects."""
    from metaworld_x.experts.environment import make_env

    env = make_env(tracking, 1, "cpu", nthread=1)
    state = env.reset(jax.random.PRNGKey(0))
    return tuple(float(x) for x in jax.device_get(state.obs["state"][0, -size:]))


STEERABLE_TRAVEL = 0.5
"""A clip whose root travels further than this (m, horizontally, over a cycle or the whole clip) is locomotion."""


def clip_travel(tracking) -> float:
    """How far (m) the expert's first clip moves its root horizontally: over one cycle if it loops, else over all of it."""
    import numpy as np

    reference = tracking.reference
    if bool(reference.loop[0]):
        return float(np.linalg.norm(np.asarray(reference.cycle_shift[0])[:2]))
    last = int(reference.num_frames[0]) - 1
    return float(np.linalg.norm(np.asarray(reference.root_pos[0, last, :2] - reference.root_pos[0, 0, :2])))


def provides_variables(task: Task, objective: Task, model) -> bool:
    """Whether `task` holds every object and every task variable `objective` reads (a sequence that ends at a touch
    draws the reach target itself), so the expert must read the scene's variables, not draw its own."""
    own = objective.reset_info(jax.random.PRNGKey(0))
    return bool(own) and objects_present(model, objective) and set(own) <= set(task.reset_info(jax.random.PRNGKey(0)))


def build_expert_scene(
    task: Task, expert_dirs: dict[str, Path], policy_specs: dict[str, dict], start_at_closest_pose: bool = True,
    state_features: int | None = None,
) -> tuple[ExpertScene, dict]:
    """The ExpertScene of `task` for the experts in `expert_dirs` ({name: folder}), and a record of how each is observed.

    With start_at_closest_pose each expert's clock starts where its home starts did in training
    (`Tracking.home_start_time`: its clip's frame closest to the scene's home pose, or the time its spec
    names), so the reference it first sees is one it can reach from where the robot stands."""
    from metaworld_x.experts.environment import expert_task

    scales, skills, record = {}, [], {}
    model = task.build_model()
    home = model.key_qpos[0][7 : 7 + len(JOINT_NAMES)]  # the scene's starting pose, before reset noise
    for name, directory in expert_dirs.items():
        spec, scale = load_expert_spec(directory)
        tracking = expert_task(spec)
        scales[name] = scale if scale is not None else tracking.config.action_scale
        size = _objective_size(tracking, int(policy_specs[name]["observation_size"]))
        layout = expert_obs_layout(name, policy_specs[name], tracking, size)
        source, frozen = "none", ()
        if size:
            if tracking.objective.name == task.name or provides_variables(task, tracking.objective, model):
                source = "shared"  # the scene runs the expert's own task, or holds its variables: one set of them
            elif objects_present(model, tracking.objective):
                source = "scene"
            else:
                source, frozen = "frozen", _training_start_features(tracking, size)
        start = tracking.home_start_time(home) if start_at_closest_pose else 0.0
        in_place = clip_in_place(model, tracking, start, task.start_root(model))
        anchored = not in_place and tracking.config.home_anchor == "once"
        skills.append(SkillObservation(name, tracking, source, frozen, start_time=start, in_place=in_place,
                                       steerable=not in_place and clip_travel(tracking) > STEERABLE_TRAVEL,
                                       anchored=anchored))
        reference = ("in place: the scene lays out the clip's props as the expert's own" if in_place
                     else "re-anchored to the robot's root and heading")
        if anchored:
            reference = "anchored once where its sub-goal says, else " + reference
        record[name] = {"obs_layout": layout, "objective_source": source, "clip": spec.clips[0], "start_time": start,
                        "reference": f"{reference}; own clock from start_time"}
    # Experts whose actions map to servo targets at different scales are mixed in target space: the scene
    # takes the largest scale, and each expert's action is scaled down to it (|gain · action| <= 1).
    scale = max(scales.values())
    skills = [replace(skill, action_gain=scales[skill.name] / scale) for skill in skills]
    for skill in skills:
        record[skill.name].update(action_scale=scales[skill.name], action_gain=skill.action_gain)
    task = replace(task, config=replace(task.config, action_scale=scale))
    return ExpertScene(objective=task, skills=tuple(skills), restart_clocks=is_sequence(task),
                       state_features=state_features), record


def is_sequence(task: Task) -> bool:
    """Whether `task` chains skills (a Sequence): its experts' clocks restart when they take over."""
    from metaworld_x.envs.tasks.sequence import Sequence

    return isinstance(task, Sequence)
