"""Real rollouts in an ExpertScene: every expert acts on its own observation, the weights mix them.

A behaviour maps (router observation [B, obs], step, key) to weights [B, K]:
the experts alone (one-hot), random mixtures held for a segment, a router,
or a router's weights refined by MPPI in the world model.
`collect` records what the world model learns from (obs, weights, reward,
next obs, done, terminated; all [T, B, ...]); `run_episodes` plays one
episode per world and measures it.
"""

import functools
import time
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from metaworld_x.experts.policy import act
from metaworld_x.routing.network import mixture_action

Behaviour = Callable[[np.ndarray, int, jax.Array], np.ndarray]


@jax.jit
def expert_actions(params: tuple, obs: tuple, gains) -> jax.Array:
    """Each expert's deterministic action on its own observation, in the scene's action units (ExpertScene.action_gains):
    params K-tuple, obs K-tuple of [B, o_k], gains [K] -> [B, K, A]."""
    actions = jnp.stack([act(p, o) for p, o in zip(params, obs)], axis=1)
    return actions * jnp.asarray(gains, jnp.float32)[None, :, None]


@jax.jit
def _mix(weights, actions):
    return mixture_action(weights, actions)


@functools.partial(jax.jit, static_argnums=(0, 1))
def take_over(names: tuple, start_times: tuple, info: dict, obs: dict, previous, weights):
    """The experts' observations [K-tuple of [B, o_k]] for `weights` [B, K], and the info with their clocks.

    An expert that becomes the dominant one (argmax of the weights) in a world where another was dominant
    (`previous` [B]; -1: none yet) takes over: its clock starts again at its start time, and it acts now on
    its observation at that time ("expert_fresh/<name>"). Returns (info, expert obs, dominant [B])."""
    dominant = jnp.argmax(weights, axis=-1)
    handed = (dominant != previous) & (previous >= 0)
    restart = handed[:, None] & (jnp.arange(len(names))[None] == dominant[:, None])  # [B, K]
    skill_time = jnp.where(restart, jnp.asarray(start_times, jnp.float32)[None], info["skill_time"])
    expert_obs = tuple(jnp.where(restart[:, k : k + 1], obs[f"expert_fresh/{n}"], obs[f"expert/{n}"])
                       for k, n in enumerate(names))
    return {**info, "skill_time": skill_time}, expert_obs, dominant


class SceneRunner:
    """An ExpertScene on the cpu backend with the experts' parameters, stepped by a behaviour."""

    def __init__(self, scene, expert_params: tuple, num_worlds: int, backend: str = "cpu", perturb=None):
        """`perturb`: a suite name or PerturbConfig the scene runs under (`metaworld_x.envs.perturb`); default none."""
        from metaworld_x.envs.backends import make
        from metaworld_x.envs.perturb import perturbed

        self.scene, self.params, self.num_worlds = scene, tuple(expert_params), num_worlds
        self.env = perturbed(make(scene, backend, num_worlds), perturb)
        self.names = scene.expert_names
        self.dominant = np.full(num_worlds, -1)  # the dominant expert of each world's episode so far (-1: none yet)

    def expert_obs(self, obs: dict) -> tuple:
        return tuple(obs[f"expert/{n}"] for n in self.names)

    def reset(self, key: jax.Array):
        self.dominant[:] = -1
        return self.env.reset(key)

    def act(self, state, weights) -> jax.Array:
        """The executed action [B, A]: Σ_k w_k · g_k · a_k (g_k: the expert's action gain in this scene)."""
        actions = expert_actions(self.params, self.expert_obs(state.obs), self.scene.action_gains)
        return _mix(jnp.asarray(weights, jnp.float32), actions)

    def step(self, state, weights):
        """One control step under `weights` [B, K]; in a scene whose clocks restart, the dominant expert's clock
        restarts when it takes over (`take_over`). Worlds whose episode ended start with no dominant expert."""
        weights = jnp.asarray(weights, jnp.float32)
        if self.scene.restart_clocks:
            info, expert_obs, dominant = take_over(self.names, self.scene.start_times, state.info, state.obs,
                                                   jnp.asarray(self.dominant), weights)
            state = state.replace(info=info)
            self.dominant = np.array(dominant)
        else:
            expert_obs = self.expert_obs(state.obs)
            self.dominant = np.array(jnp.argmax(weights, axis=-1))  # a copy: np.asarray of a jax array is read-only
        action = _mix(weights, expert_actions(self.params, expert_obs, self.scene.action_gains))
        state = self.env.step(state, action)
        self.dominant[np.asarray(state.done)] = -1
        return state


@functools.lru_cache(maxsize=16)
def _jitted(router, method: str):
    """One compiled router method per architecture, however many behaviours use it."""
    return jax.jit(getattr(router, method))


def one_hot_behaviour(num_experts: int, num_worlds: int, mixed_fraction: float, segment: int, seed: int) -> Behaviour:
    """World b runs expert b mod K alone; the last `mixed_fraction` of worlds run Dirichlet(1) mixtures, redrawn every `segment` steps."""
    rng = np.random.default_rng(seed)
    fixed = np.eye(num_experts, dtype=np.float32)[np.arange(num_worlds) % num_experts]
    mixed = np.arange(num_worlds) >= round(num_worlds * (1 - mixed_fraction))
    current = {"w": fixed.copy()}

    def choose(obs, t, key):
        if t % segment == 0 and mixed.any():
            w = current["w"]
            w[mixed] = rng.dirichlet(np.ones(num_experts), size=int(mixed.sum())).astype(np.float32)
        return current["w"]

    return choose


def label_led(behaviour: Behaviour, priors, led: np.ndarray) -> Behaviour:
    """`behaviour`, except that the worlds in `led` [B] (bool) run the top expert of their state's prior alone:
    `priors(obs [B, obs]) -> [B, K]`, a sequence's phase label. They go where the labels lead, so a sequence's later
    phases are in the data: rise_walk's "walk" phase is reached only by running rise alone for 3.5 s."""

    def choose(obs, t, key):
        weights = np.array(behaviour(obs, t, key), np.float32)
        top = np.asarray(priors(np.asarray(obs))).argmax(axis=-1)
        weights[led] = np.eye(weights.shape[-1], dtype=np.float32)[top[led]]
        return weights

    return choose


def router_behaviour(router, params, text: np.ndarray, explore: float = 0.0, seed: int = 0) -> Behaviour:
    """The router's soft weights; with explore > 0, mixed with a Dirichlet(1) draw per world and step."""
    rng = np.random.default_rng(seed)
    weights_fn = _jitted(router, "weights")

    def choose(obs, t, key):
        text_b = np.broadcast_to(text, (obs.shape[0], text.shape[-1]))
        w = np.asarray(weights_fn(params, jnp.asarray(obs), jnp.asarray(text_b)))
        if explore > 0:
            noise = rng.dirichlet(np.ones(w.shape[1]), size=w.shape[0]).astype(np.float32)
            w = (1 - explore) * w + explore * noise
        return w

    return choose


def planned_behaviour(router, params, text: np.ndarray, model, wm_params, config, record: list | None = None) -> Behaviour:
    """Weights planned by MPPI (`planner.MppiConfig`) in the world model, from the router's logits as the mean; every
    `config.every` steps a new plan, whose later steps run in between. With `record`, (router weights, executed
    weights), each [B, K], are appended per step."""
    from metaworld_x.errors import UserError
    from metaworld_x.routing.planner import batched_planner

    if router.config.fixed_expert is not None:
        raise UserError(f"a router fixed to {router.config.fixed_expert!r} has no weights to plan around; plan with a trained router")
    if model.cond_size != router.num_experts or model.obs_size != router.obs_size:
        raise UserError(f"the world model (obs {model.obs_size}, cond {model.cond_size}) is not the router's"
                        f" (obs {router.obs_size}, {router.num_experts} experts): use the one shipped with it")
    logits_fn, from_logits_fn = _jitted(router, "logits"), _jitted(router, "weights_from_logits")
    plan = batched_planner(model, config, router.config.min_weight)
    current = {}

    def choose(obs, t, key):
        replan = t % config.every == 0
        if not replan and record is None:
            return current["plan"][:, t % config.every]
        obs, text_b = jnp.asarray(obs), jnp.asarray(np.broadcast_to(text, (obs.shape[0], text.shape[-1])))
        logits = logits_fn(params, obs, text_b)
        if replan:
            current["plan"] = np.asarray(plan(wm_params, obs, logits, key))  # [B, H, K]
        w = current["plan"][:, t % config.every]
        if record is not None:
            record.append((np.asarray(from_logits_fn(logits)), w))
        return w

    return choose


def sampled_behaviour(router, params, text: np.ndarray, record: list) -> Behaviour:
    """The model-free router: one expert per world and step drawn from softmax(logits); choices appended to `record`."""
    sample = _jitted(router, "sample")

    def choose(obs, t, key):
        text_b = np.broadcast_to(text, (obs.shape[0], text.shape[-1]))
        choice = np.asarray(sample(params, jnp.asarray(obs), jnp.asarray(text_b), key))
        record.append(choice)
        return np.eye(router.num_experts, dtype=np.float32)[choice]

    return choose


def collect(runner: SceneRunner, behaviour: Behaviour, key: jax.Array, steps: int) -> dict[str, np.ndarray]:
    """`steps` control steps of every world (auto-resetting): arrays [T, B, ...] for ReplayBuffer.add_rollout."""
    key, reset_key = jax.random.split(key)
    state = runner.reset(reset_key)
    out = {k: [] for k in ("obs", "cond", "reward", "next_obs", "done", "terminated", "success")}
    start = time.perf_counter()
    for t in range(steps):
        key, step_key = jax.random.split(key)
        obs = np.asarray(state.obs["state"])
        weights = np.asarray(behaviour(obs, t, step_key), np.float32)
        state = runner.step(state, weights)
        done = np.asarray(state.done)
        next_obs = np.where(done[:, None], np.asarray(state.info["final_obs"]["state"]), np.asarray(state.obs["state"]))
        out["obs"].append(obs)
        out["cond"].append(weights)
        out["reward"].append(np.asarray(state.reward))
        out["next_obs"].append(next_obs)
        out["done"].append(done)
        out["terminated"].append(done & ~np.asarray(state.info["truncation"]))
        out["success"].append(np.asarray(state.metrics["success"]) > 0)
    arrays = {k: np.stack(v) for k, v in out.items()}
    arrays["seconds"] = np.asarray(time.perf_counter() - start)
    return arrays


def switch_times(weights, control_dt: float) -> list[tuple[int, float]]:
    """[(expert index, time it took over in s)]: the dominant expert over one episode's weights [T, K]."""
    dominant = np.argmax(np.asarray(weights), axis=-1)
    changes = [0] + [t for t in range(1, len(dominant)) if dominant[t] != dominant[t - 1]]
    return [(int(dominant[t]), t * control_dt) for t in changes]


def handover_line(names, switches) -> str:
    """`walk 0.0 s -> sit 4.2 s` of `switch_times`' output."""
    return " -> ".join(f"{names[k]} {t:.1f} s" for k, t in switches)


FALL_WINDOW_S = 2.0
"""A fall this soon (s) after the dominant expert changed counts against that handover."""


@dataclass(frozen=True)
class EpisodeResults:
    """One episode per world."""

    success: np.ndarray  # [B] bool
    returns: np.ndarray  # [B]
    time_to_success: np.ndarray  # [B] seconds of simulated time to the first success; nan if never
    length: np.ndarray  # [B] control steps
    weights: np.ndarray  # [T, B, K] the weights used while each episode lasted (nan after it ended)
    seconds: float  # wall clock
    fell: np.ndarray = None  # [B] bool: the episode ended with reason "fall"
    phase: np.ndarray = None  # [T, B] sub-goals reached after each step (-1 after the episode ended); None: no phases
    control_dt: float = 0.02  # seconds per control step

    def switches(self, b: int) -> list[tuple[int, float]]:
        """[(expert index, time it took over in s)] of world b: the dominant expert over its episode."""
        return switch_times(self.weights[: self.length[b], b], self.control_dt)

    def subgoal_times(self, b: int) -> list[float | None]:
        """Seconds at which world b reached each sub-goal (None: not reached)."""
        if self.phase is None:
            return []
        reached = self.phase[: self.length[b], b]
        count = int(np.nanmax(self.phase[:, b])) if reached.size else 0
        times = [float((np.argmax(reached > i) + 1) * self.control_dt) if (reached > i).any() else None for i in range(count)]
        return times

    def handover_falls(self) -> tuple[int, int]:
        """(falls within FALL_WINDOW_S after a switch of the dominant expert, switches), over all worlds."""
        falls = switches = 0
        for b in range(self.success.size):
            later = [t for _, t in self.switches(b)[1:]]
            switches += len(later)
            end = self.length[b] * self.control_dt
            falls += int(bool(self.fell[b]) and any(end - t <= FALL_WINDOW_S for t in later)) if self.fell is not None else 0
        return falls, switches

    def summary(self) -> dict:
        hit = self.time_to_success[np.isfinite(self.time_to_success)]
        out = {
            "episodes": int(self.success.size),
            "success": int(self.success.sum()),
            "return_mean": float(self.returns.mean()),
            "return_std": float(self.returns.std()),
            "time_to_success_s": float(hit.mean()) if hit.size else None,
            "episode_length_mean": float(self.length.mean()),
            "mean_weights": np.nanmean(self.weights, axis=(0, 1)).round(4).tolist(),  # every episode lasts >= 1 step
            "wall_clock_s": round(self.seconds, 2),
        }
        if self.fell is not None:
            falls, switches = self.handover_falls()
            out.update(falls=int(self.fell.sum()), switches=switches, falls_after_switch=falls)
        return out


def run_episodes(runner: SceneRunner, behaviour: Behaviour, key: jax.Array, max_steps: int) -> EpisodeResults:
    """Play one episode in each world (seed i of `key` for world i) for at most `max_steps` steps."""
    key, reset_key = jax.random.split(key)
    state = runner.reset(reset_key)
    b = runner.num_worlds
    alive = np.ones(b, bool)
    success = np.zeros(b, bool)
    fell = np.zeros(b, bool)
    returns = np.zeros(b)
    length = np.zeros(b, int)
    first_success = np.full(b, np.nan)
    weights_log, phase_log = [], []
    has_phase = "phase" in state.info
    fall_code = runner.env.reason_names.index("fall") if "fall" in runner.env.reason_names else -1
    dt = runner.scene.config.frame_skip * 0.002
    start = time.perf_counter()
    for t in range(max_steps):
        key, step_key = jax.random.split(key)
        weights = np.asarray(behaviour(np.asarray(state.obs["state"]), t, step_key), np.float32)
        weights_log.append(np.where(alive[:, None], weights, np.nan))
        state = runner.step(state, weights)
        reward, done = np.asarray(state.reward), np.asarray(state.done)
        hit = np.asarray(state.metrics["success"]) > 0
        returns += np.where(alive, reward, 0.0)
        length += alive
        newly = alive & hit & ~success
        first_success[newly] = (t + 1) * dt
        success |= alive & hit
        if has_phase:  # the phase an episode ended in is in its last step's metrics (the info has restarted)
            reached = sum(np.asarray(v) for k, v in state.metrics.items() if k.startswith("subgoal/"))
            phase_log.append(np.where(alive, reached, -1))
        fell |= alive & done & (np.asarray(state.info["termination_reason"]) == fall_code)
        alive &= ~done
        if not alive.any():
            break
    return EpisodeResults(success, returns, first_success, length, np.stack(weights_log), time.perf_counter() - start,
                          fell, np.stack(phase_log) if has_phase else None, dt)
