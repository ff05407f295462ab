"""The `mjx` backend: MuJoCo XLA, the whole batched step in one jitted function.

`impl="warp"` (MuJoCo Warp) on an NVIDIA GPU when warp is installed,
`impl="jax"` otherwise. Worlds are vmapped; done worlds are reset inside the
step with `jnp.where`, and the reset itself runs only on steps where some
world is done (a `lax.cond` outside the vmap).
"""

import functools

import jax
import jax.numpy as jnp
import mujoco
from mujoco import mjx

from metaworld_x.envs.compiled import CompiledTask, check_action
from metaworld_x.envs.control_step import (
    EPISODE_END_FIELDS,
    evaluate,
    first_observation,
    prepare_action,
    select,
    split_keys,
    zero_metrics,
)
from metaworld_x.envs.mjx_contacts import traced_with_c_contacts
from metaworld_x.envs.mjx_integrator import implicit_fast
from metaworld_x.envs.physics_view import view_from_mjx
from metaworld_x.envs.state import PhysicsInit, State
from metaworld_x.envs.task import Task

IMPLS = ("jax", "warp")


def warp_available() -> bool:
    """Whether MJX can use its Warp implementation (it vendors MuJoCo Warp; warp-lang must be installed)."""
    from mujoco.mjx import warp as mjx_warp

    return bool(mjx_warp.WARP_INSTALLED)


def default_impl() -> str:
    """'warp' on an NVIDIA GPU with MuJoCo Warp installed, else 'jax'."""
    try:
        on_nvidia = jax.default_backend() == "gpu" and len(jax.devices("cuda")) > 0
    except RuntimeError:  # no CUDA backend
        on_nvidia = False
    return "warp" if on_nvidia and warp_available() else "jax"


class MjxEnv:
    """B worlds of one task on MJX. `reset(rng) -> State`, `step(State, action) -> State`."""

    def __init__(
        self,
        task: Task,
        num_worlds: int,
        impl: str | None = None,
        robot_path=None,
        max_contacts_per_world: int = 64,
        physics=None,
    ):
        if num_worlds < 1:
            raise ValueError(f"num_worlds must be at least 1, got {num_worlds}")
        impl = impl or default_impl()
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        if impl == "warp" and not warp_available():
            raise RuntimeError("impl='warp' needs the warp-lang package (pip install warp-lang); use impl='jax'")
        self.compiled = CompiledTask.build(task, robot_path, physics)
        self.task, self.num_worlds, self.impl = task, num_worlds, impl
        mj_model = self.compiled.model
        self.model = mjx.put_model(mj_model, impl=impl)
        mj_data = mujoco.MjData(mj_model)
        mujoco.mj_resetDataKeyframe(mj_model, mj_data, 0)
        mujoco.mj_forward(mj_model, mj_data)
        extra = {}
        if impl == "warp":  # Warp allocates contacts and constraints for all worlds at once
            extra = {"naconmax": num_worlds * max_contacts_per_world, "njmax": 5 * max_contacts_per_world}
        self._template = mjx.put_data(mj_model, mj_data, impl=impl, **extra)
        self._model_axes = None  # per-world model fields after randomize(): a pytree of 0/None
        self._jit()

    # ---- public API --------------------------------------------------------------

    @property
    def reason_names(self) -> tuple[str, ...]:
        return self.compiled.reason_names

    @property
    def action_size(self) -> int:
        return self.compiled.action_size

    def reset(self, rng: jax.Array) -> State:
        """Reset all worlds; world i draws from `jax.random.split(rng, B)[i]`."""
        return self._reset(self.model, jax.random.split(rng, self.num_worlds))

    def step(self, state: State, action) -> State:
        """Advance every world one control step; done worlds restart at once."""
        action = check_action(action, self.num_worlds, self.action_size)
        return self._step(self.model, state, jnp.asarray(action, jnp.float32))

    def snapshot(self, state: State) -> list:
        """`state` as a flat list of arrays, for a checkpoint: flax cannot serialise `mjx.Data` itself."""
        return jax.tree_util.tree_leaves(state)

    def restore(self, snapshot: list) -> State:
        """The State that `snapshot` flattened (its structure is a reset's: traced, not run)."""
        structure = jax.tree_util.tree_structure(jax.eval_shape(self.reset, jax.random.PRNGKey(0)))
        if structure.num_leaves != len(snapshot):
            raise ValueError(
                f"snapshot holds {len(snapshot)} arrays, this env's state {structure.num_leaves};"
                " restore into an env of the same task and MJX implementation"
            )
        return jax.tree_util.tree_unflatten(structure, [jnp.asarray(leaf) for leaf in snapshot])

    def set_model(self, model, axes) -> None:
        """Run on a per-world model (see `randomize.apply`): `axes` marks its batched fields."""
        self.model, self._model_axes = model, axes
        self._jit()

    def add_root_velocity(self, state: State, delta) -> State:
        """Shove the robots: add delta [B, 2] (m/s) to each root's horizontal velocity, at the velocity stage."""
        return self._shove(self.model, state, jnp.asarray(delta, jnp.float32))

    # ---- physics -----------------------------------------------------------------

    def _jit(self):
        self._reset = jax.jit(self._reset_fn)
        self._step = jax.jit(self._step_fn)
        self._shove = jax.jit(self._shove_fn)
        if self.impl == "jax":  # MJX-JAX's plane-box contacts differ from C's and Warp's
            self._reset = traced_with_c_contacts(self._reset)
            self._step = traced_with_c_contacts(self._step)
            self._shove = traced_with_c_contacts(self._shove)

    def _shove_fn(self, model, state: State, delta) -> State:
        data = state.data.replace(qvel=state.data.qvel.at[:, :2].add(delta))
        return state.replace(data=self._vmap_model(self._velocity_stage)(model, data))

    def _vmap_model(self, fn):
        """vmap fn(model, *per_world) over worlds, with the model batched where randomised."""
        axes = self._model_axes

        def wrapped(model, *args):
            return jax.vmap(fn, in_axes=(axes,) + (0,) * len(args))(model, *args)

        return wrapped

    def _reset_fn(self, model, rngs) -> State:
        init, info = self.compiled.sample_resets(rngs)
        data = self._vmap_model(self._reset_data)(model, init)
        obs, info = jax.vmap(self._first_obs)(data, info)
        zeros = jnp.zeros(self.num_worlds, jnp.float32)
        metrics = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.num_worlds,)), zero_metrics(self.task))
        return State(data=data, obs=obs, reward=zeros, done=jnp.zeros(self.num_worlds, bool), metrics=metrics, info=info)

    def _first_obs(self, data, info):
        return first_observation(self.task, view_from_mjx(data, self.compiled.layout), info)

    def _reset_data(self, model, init: PhysicsInit):
        data = self._template.replace(
            qpos=init.qpos, qvel=init.qvel, mocap_pos=init.mocap_pos,
            ctrl=jnp.asarray(self.compiled.action_map.home, jnp.float32), time=jnp.zeros(()),
        )
        return self._velocity_stage(model, data)

    def _velocity_stage(self, model, data):
        """Position- and velocity-dependent quantities at the current state (mj_step1)."""
        if self.impl == "warp":
            return mjx.forward(model, data)
        data = mjx.fwd_position(model, data)
        data = mjx.sensor_pos(model, data)
        data = mjx.fwd_velocity(model, data)
        return mjx.sensor_vel(model, data)

    def _substep(self, model, data):
        """One physics step from, and back to, a velocity-stage state.

        This is mj_step split as mj_step2 then mj_step1, the order the C
        backend's `Batch.step(stage=mjSTAGE_VEL)` computes, so both backends
        leave derived quantities at the new state and the contact-dependent
        ones (touch sensors, actuator forces) from the last substep.
        """
        if self.impl == "warp":
            return mjx.step(model, data)
        data = mjx.fwd_actuation(model, data)
        data = mjx.fwd_acceleration(model, data)
        if data._impl.efc_J.size == 0:
            data = data.replace(qacc=data.qacc_smooth)
        else:
            data = mjx.solve(model, data)
            data = mjx.sensor_acc(model, data)
        integrator = mujoco.mjtIntegrator(int(self.compiled.model.opt.integrator))
        if integrator == mujoco.mjtIntegrator.mjINT_EULER:
            data = mjx.euler(model, data)
        elif integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST:
            data = implicit_fast(model, data)
        elif integrator == mujoco.mjtIntegrator.mjINT_RK4:
            raise NotImplementedError("RK4 has no split step; use euler or implicitfast")
        else:
            raise NotImplementedError(f"integrator {integrator.name} is not supported by MJX")
        return self._velocity_stage(model, data)

    def _physics(self, model, data, ctrl):
        data = data.replace(ctrl=ctrl)
        data = jax.lax.fori_loop(0, self.task.config.frame_skip, lambda _, d: self._substep(model, d), data)
        if self.impl == "warp":  # mjx.step leaves derived fields one substep behind
            data = self._velocity_stage(model, data)
        return data

    def _step_fn(self, model, state: State, action) -> State:
        task, layout = self.task, self.compiled.layout
        action, finite, ctrl = jax.vmap(functools.partial(prepare_action, self.compiled.action_map))(action)
        data = self._vmap_model(self._physics)(model, state.data, ctrl)
        view = jax.vmap(lambda d: view_from_mjx(d, layout))(data)
        ok = jnp.ones(self.num_worlds, bool)
        obs, reward, done, metrics, info = jax.vmap(functools.partial(evaluate, task))(
            view, state.info, action, finite, ok
        )

        keep, reset_keys = split_keys(info["rng"])
        info = {**info, "rng": keep}

        def with_resets(args):
            data, obs, info = args
            fresh = self._reset_fn(model, reset_keys)
            merged = select(done, (fresh.data, fresh.obs, fresh.info), (data, obs, info))
            return merged[0], merged[1], {**merged[2], **{k: info[k] for k in EPISODE_END_FIELDS}}

        data, obs, info = jax.lax.cond(done.any(), with_resets, lambda args: args, (data, obs, info))
        return State(data=data, obs=obs, reward=reward, done=done, metrics=metrics, info=info)
