"""Named perturbations for evaluation: shoves, model error, latency and sensor noise.

    env = perturbed(make("walk", num_worlds=10), perturb_suite("push"))   # reset(rng) and step(state, action) as before

`PerturbConfig` says what is perturbed and `SUITES` names the presets that
`--perturb` and the gymnasium ids' `perturb=` offer. `PerturbedEnv` applies one
to either backend, in one place:

- model error: `randomize` draws each world's friction, link masses and servo
  gains at every `reset`, applied with `randomize.apply`;
- shoves: a per-world schedule in `State.info` kicks the root through the
  backend's `add_root_velocity` before the step it falls on;
- latency: each world applies the action submitted `delay` steps earlier
  (`delay_action`); none has arrived at an episode's start, so the servos hold
  their reset targets (zero action) until one does;
- sensor noise: one draw per world and step corrupts the proprioceptive block
  that every policy observation opens with (`add_sensor_noise`). Task features
  the env computes from the physics (targets in the heading frame, the box)
  stay exact, and so do the privileged state and `info["final_obs"]`.

The bookkeeping lives in `State.info` under "perturb/..."; the wrapped env never
sees it. Every draw comes from the reset key folded with `PERTURB_STREAM`, so an
evaluation at a seed is repeatable and each suite starts from the nominal
evaluation's episode starts. A world keeps its model draw until the next
`reset`; an auto-reset restarts its latency and shove schedule only.
"""

import dataclasses
import functools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from metaworld_x.envs import rotations
from metaworld_x.envs.compiled import check_action
from metaworld_x.envs.randomize import RandomizationConfig, apply, horizontal_kick, model_arrays, randomize
from metaworld_x.errors import UserError
from metaworld_x.robot import JOINT_NAMES

PERTURB_STREAM = 0x5EED  # folded into the reset key: perturbation draws never consume the env's own
PRIVILEGED_KEY = "privileged_state"  # the critic's observation, left exact

# Where proprioception (`observations.proprioception`: qpos without root x, y, then qvel) puts each quantity.
_N = len(JOINT_NAMES)
ROOT_QUAT = slice(1, 5)
JOINT_POS = slice(5, 5 + _N)
JOINT_VEL = slice(5 + _N + 6, 5 + 2 * _N + 6)


@dataclass(frozen=True)
class PerturbConfig:
    """What an evaluation perturbs. A range of None, or a noise of 0, leaves that part nominal."""

    push_speed: tuple[float, float] | None = None
    """Range of each shove's change of the root's horizontal speed (m/s), in a uniformly random direction."""
    push_interval_s: tuple[float, float] = (2.5, 5.0)
    """Range of the time between shoves, and before the first (s)."""
    friction: tuple[float, float] | None = None
    """Range of the factor on every geom's sliding friction, one per world."""
    mass: tuple[float, float] | None = None
    """Range of the factor on each of the robot's link masses, one per link and world."""
    gains: tuple[float, float] | None = None
    """Range of the factors on each servo's stiffness and, drawn apart, its damping."""
    latency_steps: tuple[int, int] | None = None
    """Range of control steps an action arrives late, one draw per episode."""
    joint_pos_noise: float = 0.0
    """Standard deviation of the Gaussian noise on each observed joint angle (rad)."""
    joint_vel_noise: float = 0.0
    """Standard deviation of the Gaussian noise on each observed joint velocity (rad/s)."""
    orientation_noise_deg: float = 0.0
    """Standard deviation of each axis of the rotation that errs the observed root orientation (degrees)."""

    def __post_init__(self):
        for name in ("push_speed", "push_interval_s", "latency_steps"):
            bounds = getattr(self, name)
            if bounds is not None and not 0 <= bounds[0] <= bounds[1]:
                raise UserError(f"{name}={bounds} must satisfy 0 <= low <= high")
        if self.push_interval_s[0] <= 0:
            raise UserError(f"push_interval_s={self.push_interval_s} must be positive")
        if self.latency_steps is not None and any(int(n) != n for n in self.latency_steps):
            raise UserError(f"latency_steps={self.latency_steps} must be whole control steps")
        for name in ("joint_pos_noise", "joint_vel_noise", "orientation_noise_deg"):
            if getattr(self, name) < 0:
                raise UserError(f"{name} must be >= 0, got {getattr(self, name)}")
        _ = self.model_ranges  # RandomizationConfig checks the model ranges

    @property
    def model_ranges(self) -> RandomizationConfig | None:
        """The model factors as `randomize` draws them, or None without model error."""
        if self.friction is None and self.mass is None and self.gains is None:
            return None
        one = (1.0, 1.0)
        return RandomizationConfig(friction=self.friction or one, mass=self.mass or one, kp=self.gains or one,
                                   kv=self.gains or one)

    @property
    def pushes(self) -> bool:
        return self.push_speed is not None and self.push_speed[1] > 0

    @property
    def delays(self) -> bool:
        return self.latency_steps is not None and self.latency_steps[1] > 0

    @property
    def noisy(self) -> bool:
        return self.joint_pos_noise > 0 or self.joint_vel_noise > 0 or self.orientation_noise_deg > 0

    @property
    def nominal(self) -> bool:
        """Whether nothing is perturbed."""
        return not (self.pushes or self.delays or self.noisy or self.model_ranges is not None)

    def describe(self) -> str:
        """One line: what is perturbed."""
        parts = []
        if self.pushes:
            lo, hi = self.push_interval_s
            parts.append(f"shoves of {_range(self.push_speed)} m/s every {_range(self.push_interval_s)} s"
                         f" ({10 / hi:g}-{10 / lo:g} per 10 s)")
        ranges = [(n, r) for n, r in (("friction", self.friction), ("link mass", self.mass),
                                      ("servo gains", self.gains)) if r is not None]
        if ranges:
            parts.append(", ".join(f"{n} x{_range(r)}" for n, r in ranges))
        if self.delays:
            parts.append(f"actions {_range(self.latency_steps)} control steps late")
        if self.noisy:
            parts.append(f"noise sd {self.joint_pos_noise:g} rad on joint angles, {self.joint_vel_noise:g} rad/s on"
                         f" joint velocities, {self.orientation_noise_deg:g} deg on the root orientation")
        return "; ".join(parts) or "nominal"


def _range(bounds) -> str:
    return f"{bounds[0]:g}" if bounds[0] == bounds[1] else f"{bounds[0]:g}-{bounds[1]:g}"


_PUSH = PerturbConfig(push_speed=(0.0, 0.5))
_MODEL = PerturbConfig(friction=(0.5, 1.5), mass=(0.8, 1.2), gains=(0.8, 1.2))
_LATENCY = PerturbConfig(latency_steps=(1, 2))
_NOISE = PerturbConfig(joint_pos_noise=0.01, joint_vel_noise=0.1, orientation_noise_deg=1.0)


def _union(*configs: PerturbConfig) -> PerturbConfig:
    """Every field a config sets away from the default, from all of them."""
    default, merged = PerturbConfig(), {}
    for config in configs:
        merged.update({f.name: getattr(config, f.name) for f in dataclasses.fields(config)
                       if getattr(config, f.name) != getattr(default, f.name)})
    return PerturbConfig(**merged)


SUITES: dict[str, PerturbConfig] = {
    "none": PerturbConfig(),
    "push": _PUSH,
    "model": _MODEL,
    "latency": _LATENCY,
    "noise": _NOISE,
    "all": _union(_PUSH, _MODEL, _LATENCY, _NOISE),
}


def perturb_suite(name: str) -> PerturbConfig:
    """The preset called `name`, or a UserError that lists them."""
    if name not in SUITES:
        raise UserError(f"unknown perturbation suite {name!r}; suites: {', '.join(SUITES)}")
    return SUITES[name]


def as_config(perturb: "str | PerturbConfig | None") -> PerturbConfig:
    """A suite name, a PerturbConfig, or None (nominal) as a PerturbConfig."""
    if perturb is None:
        return SUITES["none"]
    return perturb if isinstance(perturb, PerturbConfig) else perturb_suite(perturb)


# ---- pure functions of one world, vmapped by the env --------------------------------------------


def delay_action(queue: jax.Array, action: jax.Array, delay: jax.Array):
    """(applied [nu], queue [D, nu]) once `action` [nu] is submitted.

    queue[k] is the action submitted k + 1 steps ago (zeros before the episode's first);
    the applied action is the one submitted `delay` (0..D) steps ago."""
    history = jnp.concatenate([action[None], queue])
    return history[delay], history[:-1]


def rotation_from_vector(vector: jax.Array) -> jax.Array:
    """[4] the quaternion of a rotation vector [3] (axis times angle, rad)."""
    angle = jnp.linalg.norm(vector)
    # sin(angle / 2) / angle, finite at 0
    return jnp.concatenate([jnp.cos(angle / 2)[None], 0.5 * jnp.sinc(angle / (2 * jnp.pi)) * vector])


def draw_sensor_noise(key: jax.Array, config: PerturbConfig) -> dict[str, jax.Array]:
    """One world's sensor errors for one step: joint angles [n], joint velocities [n], root rotation [4]."""
    k_pos, k_vel, k_rot = jax.random.split(key, 3)
    sigma = jnp.deg2rad(config.orientation_noise_deg)
    return {
        "joint_pos": config.joint_pos_noise * jax.random.normal(k_pos, (_N,)),
        "joint_vel": config.joint_vel_noise * jax.random.normal(k_vel, (_N,)),
        "rotation": rotation_from_vector(sigma * jax.random.normal(k_rot, (3,))),
    }


def add_sensor_noise(obs: jax.Array, noise: dict[str, jax.Array]) -> jax.Array:
    """[n_obs] an observation that opens with proprioception, its joint states and root orientation erred."""
    quat = rotations.multiply(obs[ROOT_QUAT], noise["rotation"])  # the error turns the body frame
    return (obs.at[ROOT_QUAT].set(quat).at[JOINT_POS].add(noise["joint_pos"])
            .at[JOINT_VEL].add(noise["joint_vel"]))


def push_gap_steps(config: PerturbConfig, control_dt: float) -> tuple[int, int]:
    """`push_interval_s` in whole control steps (at least one)."""
    low, high = config.push_interval_s
    return max(1, math.ceil(low / control_dt - 1e-9)), max(1, math.floor(high / control_dt + 1e-9))


def _start(key, config: PerturbConfig, gap: tuple[int, int], nu: int) -> dict:
    """A world's bookkeeping at an episode's start: its latency, an empty queue, its first shove's step."""
    key, k_delay, k_push = jax.random.split(key, 3)
    lo, hi = config.latency_steps if config.delays else (0, 0)
    delay = jax.random.randint(k_delay, (), lo, hi + 1)
    never = jnp.iinfo(jnp.int32).max
    first = jax.random.randint(k_push, (), gap[0], gap[1] + 1) if config.pushes else never
    return {"perturb/rng": key, "perturb/delay": delay.astype(jnp.int32), "perturb/queue": jnp.zeros((hi, nu)),
            "perturb/next_push": jnp.asarray(first, jnp.int32)}


def _before_step(book: dict, step, action, config: PerturbConfig, gap: tuple[int, int]):
    """(applied action [nu], shove [2] m/s, bookkeeping) of one world about to take its step number `step`."""
    key, k_kick, k_gap = jax.random.split(book["perturb/rng"], 3)
    book = {**book, "perturb/rng": key}
    if config.delays:
        action, queue = delay_action(book["perturb/queue"], action, book["perturb/delay"])
        book["perturb/queue"] = queue
    shove = jnp.zeros(2)
    if config.pushes:
        due = step >= book["perturb/next_push"]
        shove = jnp.where(due, horizontal_kick(k_kick, *config.push_speed), 0.0)
        gap_steps = jax.random.randint(k_gap, (), gap[0], gap[1] + 1)
        book["perturb/next_push"] = jnp.where(due, book["perturb/next_push"] + gap_steps, book["perturb/next_push"])
    return action, shove, book


def _observe(book: dict, obs: dict, config: PerturbConfig):
    """(obs with sensor noise, bookkeeping) of one world."""
    if not config.noisy:
        return obs, book
    key, k_noise = jax.random.split(book["perturb/rng"])
    noise = draw_sensor_noise(k_noise, config)
    obs = {k: v if k == PRIVILEGED_KEY else add_sensor_noise(v, noise) for k, v in obs.items()}
    return obs, {**book, "perturb/rng": key}


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _begin(keys, obs, config, gap, nu):
    def one(key, obs):
        return _observe(_start(key, config, gap, nu), obs, config)

    return jax.vmap(one)(keys, obs)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _prepare(book, step, action, config, gap):
    return jax.vmap(functools.partial(_before_step, config=config, gap=gap))(book, step, action)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def _finish(book, done, obs, config, gap, nu):
    def one(book, done, obs):
        key, k_restart = jax.random.split(book["perturb/rng"])
        fresh = _start(k_restart, config, gap, nu)
        book = jax.tree.map(lambda a, b: jnp.where(done, a, b), fresh, {**book, "perturb/rng": key})
        return _observe(book, obs, config)

    return jax.vmap(one)(book, done, obs)


# ---- the env -------------------------------------------------------------------------------------


class PerturbedEnv:
    """A cpu or mjx env under a PerturbConfig: `reset(rng) -> State`, `step(State, action) -> State`.

    Everything else (compiled, task, batch, reason_names, ...) is the wrapped env's."""

    def __init__(self, env, config: PerturbConfig):
        self.env, self.config = env, config
        self._nominal_model = model_arrays(env.compiled.model) if config.model_ranges is not None else None
        self._gap = push_gap_steps(config, env.compiled.control_dt)

    def __getattr__(self, name):
        if name == "env":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, rng: jax.Array):
        """Reset all worlds as the wrapped env does from `rng`, under a fresh draw of the perturbations."""
        k_model, k_worlds = jax.random.split(jax.random.fold_in(rng, PERTURB_STREAM))
        if self._nominal_model is not None:
            keys = jax.random.split(k_model, self.env.num_worlds)
            apply(self.env, jax.vmap(randomize, in_axes=(None, 0, None))(self._nominal_model, keys,
                                                                          self.config.model_ranges))
        state = self.env.reset(rng)
        obs, book = _begin(jax.random.split(k_worlds, self.env.num_worlds), state.obs, self.config, self._gap,
                           self.env.action_size)
        return state.replace(obs=obs, info={**state.info, **book})

    def step(self, state, action):
        """One control step of every world: its delayed action applied after any shove that falls due."""
        book = {k: v for k, v in state.info.items() if k.startswith("perturb/")}
        inner = state.replace(info={k: v for k, v in state.info.items() if not k.startswith("perturb/")})
        action = jnp.asarray(check_action(action, self.env.num_worlds, self.env.action_size), jnp.float32)
        action, shove, book = _prepare(book, inner.info["step"], action, self.config, self._gap)
        if self.config.pushes and np.any(np.asarray(shove) != 0):
            inner = self.env.add_root_velocity(inner, shove)
        inner = self.env.step(inner, action)
        obs, book = _finish(book, inner.done, inner.obs, self.config, self._gap, self.env.action_size)
        return inner.replace(obs=obs, info={**inner.info, **book})


def perturbed(env, perturb: "str | PerturbConfig | None"):
    """`env` under `perturb` (a suite name or a PerturbConfig); `env` itself when nothing is perturbed."""
    config = as_config(perturb)
    return env if config.nominal else PerturbedEnv(env, config)
