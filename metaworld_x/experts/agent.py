"""A shipped expert acting in a task's gymnasium env (`MetaWorldX/H1-Walk-v0`, ...), single or vector.

An expert reads its tracking observation: proprioception, then its reference
clip's next frames, then its objective's features. The task ids observe
proprioception and the task's features only, so `ExpertAgent` builds the
rest as a router does for its experts (metaworld_x.routing.skill_observation):
it keeps the expert's own reference clock, which starts where the expert's
clip is closest to the scene's home pose and advances one control step per
action, and shows it the clip re-anchored to the robot. The physics this
needs (root position, props) is the env's `info["qpos"]`, `info["qvel"]`;
where the env runs the expert's own objective (walk in H1-Walk-v0) the
objective's features are the env observation's own.

    env = gymnasium.make("MetaWorldX/H1-Walk-v0")
    agent = ExpertAgent("walk", env)
    obs, info = env.reset(seed=0)
    agent.reset()                     # at every env.reset()
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))

With a vector env, `agent.reset(terminated | truncated)` after each step
restarts the clocks of the worlds that began a new episode in it.
"""

import functools
import os
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.envs.control_step import select
from metaworld_x.envs.observations import proprioception, proprioception_size
from metaworld_x.envs.physics_view import BatchViewReader
from metaworld_x.errors import UserError
from metaworld_x.experts.policy import act, load_policy
from metaworld_x.routing.skill_observation import SkillObservation


class ExpertAgent:
    """Expert `skill` (experts/<skill>/) choosing actions for `env`, a MetaWorld-X gymnasium env of any task.

    `act(obs, info)` once per env step; `reset(done)` where episodes restart.
    Shapes follow the env: obs [o] -> action [19] for one env, [B, o] -> [B, 19]
    for a vector env of B worlds. `seed` draws the expert's own task variables,
    for an expert that reads the env's scene with them (not walk in H1-Walk-v0).
    """

    def __init__(self, skill: str, env, experts_dir: Path | None = None, seed: int = 0):
        from metaworld_x.experts.specs import installed_spec
        from metaworld_x.paths import EXPERTS_DIR
        from metaworld_x.routing.scene import build_expert_scene

        directory = Path(experts_dir or EXPERTS_DIR) / skill
        installed_spec(skill, directory)  # an unknown skill (not an own motion's either): a UserError listing the known ones
        if not (directory / "policy.json").is_file():
            raise UserError(f"no trained expert {skill!r} in {directory}; train it with `metaworld-x train expert {skill}`")
        task = getattr(env.unwrapped, "task", None)
        if task is None:
            raise UserError(f"ExpertAgent needs a MetaWorld-X env (gymnasium.make('MetaWorldX/...')), got {env.unwrapped!r}")
        self.params, policy_spec = load_policy(directory)
        # the router's scene of the env's task with this one expert (routing.scene.ExpertScene): what it observes
        self.scene, record = build_expert_scene(task, {skill: directory}, {skill: policy_spec})
        self.skill: SkillObservation = self.scene.skills[0]
        self.action_gain = record[skill]["action_scale"] / task.config.action_scale
        _check_compatible(skill, self.skill, task, self.action_gain)

        self.batched = isinstance(env.unwrapped, gym.vector.VectorEnv)
        self.num_envs = env.unwrapped.num_envs if self.batched else 1
        # a copy of the env's scene, holding every object the expert reads: the env's state is written into it and
        # its kinematics computed, so the expert sees the same view as in the router's scene
        compiled = CompiledTask.build(self.scene)
        self._batch = mujoco.batch.Batch(compiled.model, self.num_envs, min(self.num_envs, os.cpu_count() or 1))
        self._reader = BatchViewReader(self._batch, compiled.layout)
        self._qpos, self._qvel = self._batch.bind("qpos"), self._batch.bind("qvel")
        self._proprioception = proprioception_size(compiled.layout)
        self._key = jax.random.PRNGKey(seed)
        self._clock = np.full(self.num_envs, self.skill.start_time, np.float32)
        self._objective_info = self._draw_objective_info()

    @property
    def name(self) -> str:
        return self.skill.name

    def reset(self, done=None) -> None:
        """Restart the reference clock (and the expert's own task variables) of every world, or of those where
        `done` [B] is true: at `env.reset()`, and after a vector env's step for the worlds it restarted."""
        mask = np.ones(self.num_envs, bool) if done is None else np.asarray(done, bool).reshape(self.num_envs)
        self._clock[mask] = self.skill.start_time
        if jax.tree.leaves(self._objective_info):
            self._objective_info = select(jnp.asarray(mask), self._draw_objective_info(), self._objective_info)

    def act(self, obs, info: dict) -> np.ndarray:
        """The expert's action for the env's observation and info, in the env's action units; advances the clock."""
        expert_obs = self._observe(obs, info)
        action = np.asarray(_action(self.params, expert_obs, self.action_gain))
        self._clock += self.skill.tracking.control_dt
        return action if self.batched else action[0]

    def observe(self, obs, info: dict) -> np.ndarray:
        """The expert's own observation ([n], or [B, n] for a vector env) at the clock's current time."""
        expert_obs = np.asarray(self._observe(obs, info))
        return expert_obs if self.batched else expert_obs[0]

    def _observe(self, obs, info: dict) -> jax.Array:
        """[B, n] the expert's observations of the env's state."""
        obs = np.asarray(obs, np.float32).reshape(self.num_envs, -1)
        self._qpos[...] = np.asarray(info["qpos"]).reshape(self._qpos.shape)
        self._qvel[...] = np.asarray(info["qvel"]).reshape(self._qvel.shape)
        self._batch.forward(None, stage=mujoco.mjtStage.mjSTAGE_VEL)
        view = jax.tree.map(np.array, self._reader.read())
        expert_obs = _expert_obs(self.skill, self._proprioception, view, self._clock, obs, self._objective_info)
        if expert_obs.shape[-1] != self.params.obs_mean.shape[0]:
            raise UserError(f"expert {self.name!r} reads {self.params.obs_mean.shape[0]} observation entries but"
                            f" {expert_obs.shape[-1]} were built from this env; was the env made with other settings?")
        return expert_obs

    def _draw_objective_info(self) -> dict:
        self._key, key = jax.random.split(self._key)
        return jax.vmap(self.skill.reset_info)(jax.random.split(key, self.num_envs))


def _check_compatible(skill: str, observation: SkillObservation, task, gain: float) -> None:
    """A UserError when the env cannot carry out what the expert was trained to do."""
    if gain > 1.0:
        raise UserError(
            f"expert {skill!r} moves its servo targets up to {gain:g}x as far as this env's actions can"
            f" (action_scale {task.config.action_scale:g}); make the env with action_scale={task.config.action_scale * gain:g}"
        )
    expert_skip, env_skip = observation.tracking.config.frame_skip, task.config.frame_skip
    if expert_skip != env_skip:
        raise UserError(f"expert {skill!r} acts every {expert_skip} physics steps, this env every {env_skip};"
                        f" make the env with frame_skip={expert_skip}")


@functools.partial(jax.jit, static_argnums=(0, 1))
def _expert_obs(skill: SkillObservation, proprioception_entries: int, view, clock, task_obs, objective_info):
    """[B, n] the expert's observations from the scene's view [B], its clock [B] and the env's observation [B, o]."""

    def one(view, clock, task_obs, objective_info):
        if skill.objective_source == "shared":
            # the env runs the expert's own objective with its own task variables: the env's observation holds the
            # objective's features after proprioception, which the expert would otherwise have to guess
            objective = task_obs[proprioception_entries:]
        else:
            objective = skill.objective_features(view, {}, objective_info)
        return jnp.concatenate([proprioception(view), skill.reference(view, clock), objective]).astype(jnp.float32)

    return jax.vmap(one)(view, clock, task_obs, objective_info)


@jax.jit
def _action(params, expert_obs, gain):
    """[B, A] the expert's deterministic action, scaled into the env's action units (its targets unchanged)."""
    return act(params, expert_obs) * gain
