"""What a task is: a frozen config plus pure functions of one world's PhysicsView.

A task subclass declares
- `scene`, `variant`: where it runs;
- `bodies`, `sites`, `joints`: the extra objects its view must hold;
- a `Config` (frozen dataclass) with a `rewards` field whose float fields are
  the scales of its reward terms, each computed by a method `_reward_<name>`;
- `termination_reasons`, each decided by a method `_terminate_<reason>`;
- `reset_info` (task variables), `reset_physics` (reset distribution),
  `features` (task observations), `success`;
- optionally `metric_names`, reported each step by `account`.

Everything here takes and returns one world's arrays; the backends vmap it.
A motion-tracking task fits the same mould: `reset_info` draws a clip and a
start time, `reset_physics` puts the robot in the clip's pose, `advance` moves
the clip time on, `features` adds the reference frames to the observation,
and its `_reward_*` terms compare the view with the reference.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from metaworld_x.envs.observations import privileged_physics, proprioception
from metaworld_x.envs.physics_view import PhysicsView
from metaworld_x.envs.sensors import add_view_sensors
from metaworld_x.envs.state import PhysicsInit
from metaworld_x.errors import UserError
from metaworld_x.robot import JOINT_NAMES
from metaworld_x.scene import build_scene

Info = dict[str, Any]


@dataclass(frozen=True)
class RewardScales:
    """The scale of each reward term; a subclass adds one float field per term."""


@dataclass(frozen=True)
class TaskConfig:
    """Settings every task has. Subclasses add their own fields."""

    episode_length: int = 1000
    """Control steps per episode; reaching it ends the episode as a truncation."""
    frame_skip: int = 10
    """Physics substeps per control step (the model's timestep is 0.002 s)."""
    action_scale: float = 1.0
    """An action of 1 moves a servo target from home by this fraction of the joint's half range."""
    fall_height: float = 0.2
    """The episode ends with reason "fall" when the pelvis is lower than this (m)."""
    reset_noise: float = 0.02
    """Half width of the uniform noise on joint angles (rad) and velocities (rad/s) at reset."""
    rewards: RewardScales = field(default_factory=RewardScales)
    """Scale of each reward term."""

    def __post_init__(self):
        if self.episode_length < 1:
            raise UserError(f"episode_length must be at least 1, got {self.episode_length}")
        if self.frame_skip < 1:
            raise UserError(f"frame_skip must be at least 1, got {self.frame_skip}")
        if not self.action_scale > 0:
            raise UserError(f"action_scale must be positive, got {self.action_scale}")
        if self.reset_noise < 0:
            raise UserError(f"reset_noise must be >= 0, got {self.reset_noise}")


def with_overrides(config, overrides: dict[str, Any]):
    """`config` with fields replaced; `rewards` may be given as a dict of scales."""
    names = {f.name for f in dataclasses.fields(config)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise UserError(
            f"unknown setting(s) {', '.join(unknown)} for {type(config).__name__}; settings: {', '.join(sorted(names))}"
        )
    overrides = dict(overrides)
    if isinstance(overrides.get("rewards"), dict):
        overrides["rewards"] = with_overrides(config.rewards, overrides["rewards"])
    return dataclasses.replace(config, **overrides)


@dataclass(frozen=True)
class Task:
    """Base task: stands in `scene`, falls below `config.fall_height`."""

    config: TaskConfig = None  # None: the class's default Config()

    name: ClassVar[str] = ""
    scene: ClassVar[str] = "floor"
    variant: ClassVar[str] = "h1"
    bodies: ClassVar[tuple[str, ...]] = ()
    sites: ClassVar[tuple[str, ...]] = ()
    joints: ClassVar[tuple[str, ...]] = ()
    termination_reasons: ClassVar[tuple[str, ...]] = ("fall",)
    metric_names: ClassVar[tuple[str, ...]] = ()
    """Extra per-step metrics the task reports through `account`, besides its reward terms and success."""
    success_bar: ClassVar[float | None] = None
    """Episode return that counts as success (HumanoidBench's bars), if the task uses one."""
    Config: ClassVar[type] = TaskConfig

    def __post_init__(self):
        if self.config is None:
            object.__setattr__(self, "config", self.Config())
        if not isinstance(self.config, self.Config):
            raise UserError(f"{type(self).__name__} needs a {self.Config.__name__}, got {type(self.config).__name__}")
        missing = [f.name for f in dataclasses.fields(self.config.rewards) if not hasattr(self, f"_reward_{f.name}")]
        missing += [r for r in self.termination_reasons if not hasattr(self, f"_terminate_{r}")]
        if missing:
            raise TypeError(f"{type(self).__name__} lacks methods for {missing}")

    # ---- the model -------------------------------------------------------------

    def build_spec(self, robot_path=None) -> mujoco.MjSpec:
        """The task's scene with the sensors every view reads."""
        spec = build_scene(self.scene, self.variant, robot_path)
        add_view_sensors(spec)
        return spec

    def build_model(self, robot_path=None) -> mujoco.MjModel:
        return self.build_spec(robot_path).compile()

    # ---- rewards ---------------------------------------------------------------

    @property
    def reward_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.config.rewards))

    def reward_terms(self, view: PhysicsView, info: Info, action) -> dict[str, jax.Array]:
        """Each term times its scale; the reward is their sum."""
        scales = self.config.rewards
        return {
            n: getattr(scales, n) * jnp.asarray(getattr(self, f"_reward_{n}")(view, info, action), jnp.float32)
            for n in self.reward_names
        }

    # ---- episode start ---------------------------------------------------------

    def reset_info(self, rng: jax.Array) -> Info:
        """Task variables drawn at reset (targets, commands); none by default."""
        return {}

    def start_root(self, model: mujoco.MjModel) -> np.ndarray:
        """[3] where the robot's root starts in `model`, before reset noise: the home keyframe's (a task that
        starts elsewhere, seated, says so)."""
        return np.asarray(model.key_qpos[0][:3])

    def reset_physics(self, rng: jax.Array, home: PhysicsInit, info: Info) -> PhysicsInit:
        """The reset distribution: home pose with uniform noise on the robot's joints."""
        return perturb_robot(rng, home, self.config.reset_noise)

    # ---- during the episode ----------------------------------------------------

    def advance(self, view: PhysicsView, info: Info) -> Info:
        """Update task variables after a step (a tracking task moves its clip time)."""
        return info

    def features(self, view: PhysicsView, info: Info) -> jax.Array:
        """[k] task observations appended to proprioception; none by default."""
        return jnp.zeros(0, jnp.float32)

    def privileged_features(self, view: PhysicsView, info: Info) -> jax.Array:
        """[k] extra task observations for the critic only."""
        return jnp.zeros(0, jnp.float32)

    def observe(self, view: PhysicsView, info: Info) -> dict[str, jax.Array]:
        state = jnp.concatenate([proprioception(view), self.features(view, info)])
        progress = info["step"].astype(jnp.float32) / self.config.episode_length
        privileged = jnp.concatenate([
            state, privileged_physics(view), info["last_action"], progress[None], self.privileged_features(view, info),
        ])
        return {"state": state.astype(jnp.float32), "privileged_state": privileged.astype(jnp.float32)}

    def account(self, view: PhysicsView, info: Info, terms: dict[str, jax.Array]) -> tuple[Info, dict[str, jax.Array]]:
        """Bookkeeping once the step's reward terms are known: (info, the metrics named in `metric_names`)."""
        return info, {}

    def _terminate_fall(self, view: PhysicsView, info: Info):
        return view.root_pos[2] < self.config.fall_height

    def success(self, view: PhysicsView, info: Info):
        """Whether the episode has succeeded; by default, its return reached `success_bar`."""
        if self.success_bar is None:
            raise NotImplementedError(f"{type(self).__name__} must define success() or success_bar")
        return info["episode_return"] >= self.success_bar

    def terminations(self, view: PhysicsView, info: Info) -> tuple[jax.Array, ...]:
        return tuple(jnp.asarray(getattr(self, f"_terminate_{r}")(view, info)) for r in self.termination_reasons)


def perturb_robot(rng: jax.Array, home: PhysicsInit, noise: float) -> PhysicsInit:
    """Uniform noise of half width `noise` on the robot's hinge angles and on all velocities.

    The free joint's position and orientation are left alone: the robot
    starts on its feet, facing +x.
    """
    k1, k2 = jax.random.split(rng)
    qpos, qvel = home.qpos, home.qvel
    n = len(JOINT_NAMES)  # the robot's coordinates come first: 7 (6 dofs) of its free joint, then its hinges
    qpos = qpos.at[7 : 7 + n].add(jax.random.uniform(k1, (n,), minval=-noise, maxval=noise))
    qvel = qvel.at[: 6 + n].add(jax.random.uniform(k2, (6 + n,), minval=-noise, maxval=noise))
    return home.replace(qpos=qpos, qvel=qvel)
