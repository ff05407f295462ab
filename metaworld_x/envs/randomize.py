"""Domain randomisation as pure functions, applied to either backend.

    arrays = model_arrays(env.compiled.model)                      # nominal values
    keys = jax.random.split(rng, env.num_worlds)
    per_world = jax.vmap(randomize, in_axes=(None, 0, None))(arrays, keys, config)
    apply(env, per_world)                                          # cpu: Batch.expand; mjx: batched model

`randomize` draws one world's friction, the robot's link masses and PD gains
(kp and kv scaled together with the servo's bias terms, so each stays a PD
servo); `push` kicks the robot's root velocity, the usual stand-in for shoves.
`metaworld_x.envs.perturb` builds its evaluation suites from these.
"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from flax import struct

from metaworld_x.errors import UserError

AFFINE_BIAS = int(mujoco.mjtBias.mjBIAS_AFFINE)


@dataclass(frozen=True)
class RandomizationConfig:
    """Ranges of the factors drawn per world (uniform), and the push."""

    friction: tuple[float, float] = (0.6, 1.4)
    """Factor on every geom's sliding friction."""
    mass: tuple[float, float] = (0.9, 1.1)
    """Factor on each of the robot's link masses, drawn per link (props keep theirs)."""
    kp: tuple[float, float] = (0.9, 1.1)
    """Factor on each servo's stiffness, drawn per servo."""
    kv: tuple[float, float] = (0.9, 1.1)
    """Factor on each servo's damping, drawn per servo."""
    push_speed: float = 0.5
    """Largest horizontal speed change (m/s) that `push` gives the root."""

    def __post_init__(self):
        for name in ("friction", "mass", "kp", "kv"):
            low, high = getattr(self, name)
            if not 0 < low <= high:
                raise UserError(f"randomisation range {name}={low, high} must satisfy 0 < low <= high")
        if self.push_speed < 0:
            raise UserError(f"push_speed must be >= 0, got {self.push_speed}")


@struct.dataclass
class ModelArrays:
    """The model fields randomisation changes (one world; [B, ...] once randomised)."""

    geom_friction: jax.Array  # [ngeom, 3] sliding, torsional, rolling
    body_mass: jax.Array  # [nbody]
    actuator_gainprm: jax.Array  # [nu, 10]; [:, 0] is kp for a position servo
    actuator_biasprm: jax.Array  # [nu, 10]; [:, 1] is -kp, [:, 2] is -kv
    actuator_biastype: jax.Array = struct.field(pytree_node=False, default=None)  # which actuators are servos
    robot_body: tuple[bool, ...] = struct.field(pytree_node=False, default=None)  # [nbody] the robot's links


FIELDS = ("geom_friction", "body_mass", "actuator_gainprm", "actuator_biasprm")


def model_arrays(model: mujoco.MjModel) -> ModelArrays:
    """The nominal values, from an MjModel."""
    from metaworld_x.robot.parts import robot_bodies

    return ModelArrays(
        **{f: jnp.asarray(getattr(model, f), jnp.float32) for f in FIELDS},
        actuator_biastype=tuple(int(t) for t in model.actuator_biastype),
        robot_body=tuple(bool(b) for b in robot_bodies(model)),
    )


def randomize(arrays: ModelArrays, rng: jax.Array, config: RandomizationConfig) -> ModelArrays:
    """One world's randomised model fields; vmap over keys for a batch."""
    k_friction, k_mass, k_kp, k_kv = jax.random.split(rng, 4)
    nu = arrays.actuator_gainprm.shape[0]
    servo = jnp.asarray(arrays.actuator_biastype) == AFFINE_BIAS

    def factor(key, bounds, shape=()):
        return jax.random.uniform(key, shape, minval=bounds[0], maxval=bounds[1])

    friction = arrays.geom_friction.at[:, 0].multiply(factor(k_friction, config.friction))
    link_factor = factor(k_mass, config.mass, arrays.body_mass.shape)
    mass = arrays.body_mass * jnp.where(jnp.asarray(arrays.robot_body), link_factor, 1.0)
    kp = jnp.where(servo, factor(k_kp, config.kp, (nu,)), 1.0)
    kv = jnp.where(servo, factor(k_kv, config.kv, (nu,)), 1.0)
    gain = arrays.actuator_gainprm.at[:, 0].multiply(kp)
    bias = arrays.actuator_biasprm.at[:, 1].multiply(kp).at[:, 2].multiply(kv)
    return arrays.replace(geom_friction=friction, body_mass=mass, actuator_gainprm=gain, actuator_biasprm=bias)


def horizontal_kick(rng: jax.Array, low: float, high: float) -> jax.Array:
    """[2] a change of horizontal velocity (m/s): speed uniform in [low, high], direction uniform."""
    k_angle, k_speed = jax.random.split(rng)
    angle = jax.random.uniform(k_angle, (), minval=-jnp.pi, maxval=jnp.pi)
    speed = jax.random.uniform(k_speed, (), minval=low, maxval=high)
    return speed * jnp.stack([jnp.cos(angle), jnp.sin(angle)])


def apply(env, arrays: ModelArrays) -> None:
    """Give each of the env's worlds its own model fields ([B, ...] arrays)."""
    from metaworld_x.envs.cpu_env import CpuEnv
    from metaworld_x.envs.mjx_env import MjxEnv

    batch_size = arrays.body_mass.shape[0] if arrays.body_mass.ndim == 2 else None
    if batch_size != env.num_worlds:
        raise UserError(
            f"randomised arrays must have a leading axis of {env.num_worlds} worlds; vmap randomize over"
            " jax.random.split(rng, num_worlds)"
        )
    if isinstance(env, CpuEnv):
        # mass changes feed derived constants (subtree masses, invweights): the env reruns set_const
        env.set_model_fields({f: np.asarray(getattr(arrays, f), np.float64) for f in FIELDS})
    elif isinstance(env, MjxEnv):
        model = env.model.tree_replace({f: getattr(arrays, f) for f in FIELDS})
        axes = jax.tree.map(lambda _: None, env.model).tree_replace({f: 0 for f in FIELDS})
        env.set_model(model, axes)
    else:
        raise TypeError(f"cannot randomise a {type(env).__name__}")


def push(env, state, rng: jax.Array, config: RandomizationConfig, mask=None):
    """The State with the roots of worlds in `mask` ([B] bool, default all) kicked (see `add_root_velocity`)."""
    keys = jax.random.split(rng, env.num_worlds)
    mask = jnp.ones(env.num_worlds, bool) if mask is None else jnp.asarray(mask)
    delta = jax.vmap(horizontal_kick, in_axes=(0, None, None))(keys, 0.0, config.push_speed)
    return env.add_root_velocity(state, jnp.where(mask[:, None], delta, 0.0))
