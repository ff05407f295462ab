"""A task bound to its compiled MuJoCo model: what both backends start from."""

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from metaworld_x.envs.actions import ActionMap
from metaworld_x.envs.control_step import reason_names, reset_world
from metaworld_x.envs.observations import proprioception_size
from metaworld_x.envs.physics_view import ViewLayout
from metaworld_x.envs.state import PhysicsInit
from metaworld_x.envs.task import Task
from metaworld_x.robot import JOINT_NAMES

HOME_KEYFRAME = 0


@dataclass(frozen=True)
class TaskStatics:
    """The hashable part of a CompiledTask: what jitted functions close over.

    Two envs of equal tasks on equal models have equal statics, so jax's
    compilation cache serves the second env without compiling again.
    """

    task: Task
    layout: ViewLayout
    action_map: ActionMap
    home_qpos: tuple[float, ...]
    home_qvel: tuple[float, ...]
    home_mocap_pos: tuple[tuple[float, float, float], ...]

    @property
    def home(self) -> PhysicsInit:
        """The home keyframe, as float32 arrays."""
        return PhysicsInit(
            qpos=jnp.asarray(self.home_qpos, jnp.float32),
            qvel=jnp.asarray(self.home_qvel, jnp.float32),
            mocap_pos=jnp.asarray(self.home_mocap_pos, jnp.float32).reshape(-1, 3),
        )

    def sample_resets(self, rngs: jax.Array):
        """[B] keys -> (PhysicsInit [B], info [B]); pure, for jit."""
        home, nu = self.home, self.action_map.size
        return jax.vmap(lambda k: reset_world(self.task, home, k, nu))(rngs)


@dataclass(frozen=True)
class CompiledTask:
    """The task, its model, and the static facts derived from the model once."""

    task: Task
    model: mujoco.MjModel
    layout: ViewLayout
    action_map: ActionMap

    @staticmethod
    def build(task: Task, robot_path=None, physics=None) -> "CompiledTask":
        """`physics`: a `PhysicsOptions` laid over the model (solver iterations, which robot geoms collide)."""
        model = task.build_model(robot_path)
        if physics is not None:
            physics.apply(model)
        layout = ViewLayout.from_model(model, task.bodies, task.sites, task.joints)
        n = len(JOINT_NAMES)
        if layout.robot_qpos != tuple(range(7 + n)) or layout.robot_qvel != tuple(range(6 + n)):
            raise ValueError("the robot's coordinates must come first in qpos and qvel; compose scenes with build_scene")
        return CompiledTask(task, model, layout, ActionMap.from_model(model, task.config.action_scale, HOME_KEYFRAME))

    @functools.cached_property
    def statics(self) -> TaskStatics:
        m = self.model
        mocap = m.key_mpos[HOME_KEYFRAME].reshape(m.nmocap, 3) if m.nmocap else np.zeros((0, 3))
        return TaskStatics(
            task=self.task, layout=self.layout, action_map=self.action_map,
            home_qpos=tuple(map(float, m.key_qpos[HOME_KEYFRAME])),
            home_qvel=tuple(map(float, m.key_qvel[HOME_KEYFRAME])),
            home_mocap_pos=tuple(tuple(map(float, p)) for p in mocap),
        )

    @property
    def home(self) -> PhysicsInit:
        return self.statics.home

    @property
    def reason_names(self) -> tuple[str, ...]:
        return reason_names(self.task)

    @property
    def action_size(self) -> int:
        return self.model.nu

    @property
    def proprioception_size(self) -> int:
        return proprioception_size(self.layout)

    def sample_resets(self, rngs: jax.Array):
        return self.statics.sample_resets(rngs)

    @property
    def control_dt(self) -> float:
        return float(self.model.opt.timestep * self.task.config.frame_skip)


def check_action(action, num_worlds: int, nu: int):
    """The action as an array of shape [num_worlds, nu], or a ValueError that says what was expected."""
    shape = getattr(action, "shape", None)
    if shape is None:
        action = np.asarray(action, np.float32)
        shape = action.shape
    if tuple(shape) != (num_worlds, nu):
        raise ValueError(
            f"action must have shape ({num_worlds}, {nu}) = (worlds, actuators), got {tuple(shape)}"
        )
    return action
