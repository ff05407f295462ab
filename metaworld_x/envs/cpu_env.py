"""The `cpu` backend: MuJoCo's C engine stepping B worlds on a thread pool.

Physics runs in `mujoco.batch.Batch`; the task's JAX functions run on the
bound arrays. Per control step there are two jitted calls (action -> servo
targets, then reward/termination/observation), one `Batch.step` of
`frame_skip` substeps, and, only on steps where some world is done, a reset of
those worlds in the batch and one more jitted call for their first
observation. MJX is not used here.
"""

import functools
import os

import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np
from flax import struct

from metaworld_x.envs.compiled import HOME_KEYFRAME, CompiledTask, TaskStatics, check_action
from metaworld_x.envs.control_step import (
    EPISODE_END_FIELDS,
    evaluate,
    first_observation,
    prepare_action,
    select,
    split_keys,
    zero_metrics,
)
from metaworld_x.envs.physics_view import BatchViewReader, PhysicsView
from metaworld_x.envs.state import PhysicsInit, State
from metaworld_x.envs.task import Task

# Warnings the engine raises when a state diverges; it then resets that
# simulation to the model's defaults on its own, so a rising count is the
# only trace of it.
DIVERGENCE_WARNINGS = (
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_BADQACC,
)


@struct.dataclass
class CpuPhysics:
    """What a cpu-backend State holds of the physics: a copy of its view.

    The simulations themselves live in the env's batch, so only the latest
    State can be stepped; `generation` tells which one that is.
    """

    view: PhysicsView
    generation: int = struct.field(pytree_node=False)


class CpuEnv:
    """B worlds of one task on the C engine. `reset(rng) -> State`, `step(State, action) -> State`."""

    def __init__(
        self,
        task: Task,
        num_worlds: int,
        nthread: int | None = None,
        auto_reset: bool = True,
        robot_path=None,
        physics=None,
    ):
        if num_worlds < 1:
            raise ValueError(f"num_worlds must be at least 1, got {num_worlds}")
        self.compiled = CompiledTask.build(task, robot_path, physics)
        self.task, self.num_worlds, self.auto_reset = task, num_worlds, auto_reset
        self.nthread = nthread or os.cpu_count() or 1
        self.batch = mujoco.batch.Batch(self.compiled.model, num_worlds, self.nthread)
        self._reader = BatchViewReader(self.batch, self.compiled.layout)
        self._qpos, self._qvel = self.batch.bind("qpos"), self.batch.bind("qvel")
        self._ctrl, self._mocap_pos = self.batch.bind("ctrl"), self.batch.bind("mocap_pos")
        self._divergence = np.asarray([int(w) for w in DIVERGENCE_WARNINGS])
        self._generation = -1

        # jitted with the hashable statics as a static argument, so a second
        # env of the same task reuses the first one's compiled functions
        statics = self.compiled.statics
        self._prepare = functools.partial(_prepare, statics)
        self._sample = functools.partial(_sample, statics)
        self._first_obs = functools.partial(_first_obs, statics)
        self._post = functools.partial(_post, statics)
        self._merge_resets = functools.partial(_merge_resets, statics)

    # ---- public API --------------------------------------------------------------

    @property
    def reason_names(self) -> tuple[str, ...]:
        return self.compiled.reason_names

    @property
    def action_size(self) -> int:
        return self.compiled.action_size

    def reset(self, rng: jax.Array) -> State:
        """Reset all worlds; world i draws from `jax.random.split(rng, B)[i]`, or from rng[i] where rng holds B keys
        (this process's rows of a larger batch split over processes)."""
        keys = rng if jnp.ndim(rng) == 2 else jax.random.split(rng, self.num_worlds)
        if keys.shape[0] != self.num_worlds:
            raise ValueError(f"reset got {keys.shape[0]} keys for {self.num_worlds} worlds")
        init, info = self._sample(keys)
        self._write_resets(None, init)
        view = self._read_view()
        obs, info = self._first_obs(view, info)
        zeros = jnp.zeros(self.num_worlds, jnp.float32)
        metrics = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.num_worlds,)), zero_metrics(self.task))
        return self._state(view, obs, zeros, jnp.zeros(self.num_worlds, bool), metrics, info)

    def step(self, state: State, action) -> State:
        """Advance every world one control step; with auto_reset, done worlds restart at once."""
        self._check_latest(state)
        action = check_action(action, self.num_worlds, self.action_size)
        action, finite, ctrl = self._prepare(action)
        np.copyto(self._ctrl, np.asarray(ctrl))
        diverged_before = self._divergence_count()
        self.batch.step(nstep=self.task.config.frame_skip, stage=mujoco.mjtStage.mjSTAGE_VEL)
        physics_ok = self._divergence_count() == diverged_before
        view = self._read_view()
        obs, reward, done, metrics, info, init, fresh_info = self._post(view, state.info, action, finite, physics_ok)
        if self.auto_reset:
            done_np = np.asarray(done)
            if done_np.any():
                self._write_resets(np.flatnonzero(done_np), init)
                view = self._read_view()
                obs, info = self._merge_resets(view, fresh_info, obs, info, done)
        return self._state(view, obs, reward, done, metrics, info)

    def snapshot(self, state: State) -> dict:
        """The latest State with the simulations' full integration state, for a checkpoint.

        `restore` of it continues bit for bit: `mujoco.batch` recomputes every
        derived quantity from these rows on its next call.
        """
        self._check_latest(state)
        return {"physics": np.array(self.batch.state), "state": state.replace(data=state.data.view)}

    def restore(self, snapshot: dict) -> State:
        """Put the simulations back as `snapshot` recorded them; the returned State is the latest."""
        physics = np.asarray(snapshot["physics"])
        if physics.shape != self.batch.state.shape:
            raise ValueError(
                f"snapshot holds {physics.shape} simulation state, this env {self.batch.state.shape};"
                " restore into an env of the same task and number of worlds"
            )
        self.batch.state[...] = physics
        saved = snapshot["state"]
        view = saved.data
        self._generation += 1
        return saved.replace(data=CpuPhysics(view=jax.tree.map(np.array, view), generation=self._generation))

    def set_model_fields(self, fields: dict[str, np.ndarray]) -> None:
        """Per-world model values, {MjModel field: [B, ...]} (see `randomize.apply`)."""
        for name, values in fields.items():
            self.batch.expand(name)[...] = values
        self.batch.set_const()

    def add_root_velocity(self, state: State, delta) -> State:
        """Shove the robots: add delta [B, 2] (m/s) to each root's horizontal velocity before the next step.

        Shoved worlds are brought back to the velocity stage, so the next step's first substep
        sees the new velocity in its damping and contact terms too. The State's view still holds
        the velocities it observed."""
        self._check_latest(state)
        delta = np.asarray(delta, np.float64)
        rows = np.flatnonzero(np.any(delta != 0, axis=1))
        if rows.size:
            self._qvel[rows, :2] += delta[rows]
            self.batch.forward(rows, stage=mujoco.mjtStage.mjSTAGE_VEL)
        return state

    # ---- internals ---------------------------------------------------------------

    def _read_view(self) -> PhysicsView:
        """A copy of the current view. JAX may read a NumPy argument in place, after the call
        returns, so the reader's buffers, refilled every step, must never reach a jitted call."""
        return jax.tree.map(np.array, self._reader.read())

    def _state(self, view, obs, reward, done, metrics, info) -> State:
        self._generation += 1
        return State(
            data=CpuPhysics(view=view, generation=self._generation),
            obs=obs, reward=reward, done=done, metrics=metrics, info=info,
        )

    def _check_latest(self, state: State) -> None:
        if not isinstance(state.data, CpuPhysics) or state.data.generation != self._generation:
            raise ValueError(
                "this State is not the latest one of this env: the cpu backend keeps its worlds in one live"
                " batch, so step the State returned by the latest reset() or step()"
            )

    def _divergence_count(self) -> np.ndarray:
        return self.batch.warning[:, self._divergence, 1].sum(axis=1)

    def _write_resets(self, ids, init: PhysicsInit) -> None:
        """Put worlds `ids` (None: all) in their reset state, at the velocity stage."""
        rows = np.s_[:] if ids is None else ids
        self.batch.reset(ids, keyframe=HOME_KEYFRAME, stage=mujoco.mjtStage.mjSTAGE_NONE)
        self._qpos[rows] = np.asarray(init.qpos)[rows]
        self._qvel[rows] = np.asarray(init.qvel)[rows]
        if self._mocap_pos.shape[1]:
            self._mocap_pos[rows] = np.asarray(init.mocap_pos)[rows]
        self.batch.forward(ids, stage=mujoco.mjtStage.mjSTAGE_VEL)


# ---- the jitted halves of a step, shared by every CpuEnv of equal statics ------


@functools.partial(jax.jit, static_argnums=0)
def _prepare(statics: TaskStatics, action):
    return jax.vmap(functools.partial(prepare_action, statics.action_map))(action)


@functools.partial(jax.jit, static_argnums=0)
def _sample(statics: TaskStatics, rngs):
    return statics.sample_resets(rngs)


@functools.partial(jax.jit, static_argnums=0)
def _first_obs(statics: TaskStatics, view, info):
    return jax.vmap(functools.partial(first_observation, statics.task))(view, info)


@functools.partial(jax.jit, static_argnums=0)
def _post(statics: TaskStatics, view, info, action, finite, physics_ok):
    """Reward, termination and observation of every world, plus a reset draw for each."""
    outputs = jax.vmap(functools.partial(evaluate, statics.task))(view, info, action, finite, physics_ok)
    obs, reward, done, metrics, info = outputs
    keep, reset_keys = split_keys(info["rng"])
    # reset draws for every world are cheap next to a physics step, and
    # drawing them here saves a jitted call on steps where a world is done
    init, fresh_info = statics.sample_resets(reset_keys)
    return obs, reward, done, metrics, {**info, "rng": keep}, init, fresh_info


@functools.partial(jax.jit, static_argnums=0)
def _merge_resets(statics: TaskStatics, view, fresh_info, obs, info, done):
    """The first observation of the worlds just reset, merged into the step's outputs."""
    first_obs, fresh_info = jax.vmap(functools.partial(first_observation, statics.task))(view, fresh_info)
    obs, merged = select(done, (first_obs, fresh_info), (obs, info))
    return obs, {**merged, **{k: info[k] for k in EPISODE_END_FIELDS}}
