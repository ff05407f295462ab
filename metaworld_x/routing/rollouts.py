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

from metaworld_x.policy import act
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


class SceneRunner:
    """An ExpertScene on the cpu backend with the experts' parameters, stepped by a behaviour."""

    def __init__(self, scene, expert_params: tuple, num_worlds: int, backend: str = "cpu", perturb=None):
        """`perturb`: a suite name or PerturbConfig the scene runs under (`metaworld_x.envs.perturb`); default none."""
        from metaworld_x.envs.backends import make
        from metaworld_x.envs.perturb import perturbed

        self.scene, self.params, self.num_worlds = scene, tuple(expert_params), num_worlds
        self.env = perturbed(make(scene, backend, num_worlds), perturb)
        self.names = scene.expert_names

    def expert_obs(self, obs: dict) -> tuple:
        return tuple(obs[f"expert/{n}"] for n in self.names)

    def act(self, state, weights) -> jax.Array:
        """The executed action [B, A]: Σ_k w_k · g_k · a_k (g_k: the expert's action gain in this scene)."""
        actions = expert_actions(self.params, self.expert_obs(state.obs), self.scene.action_gains)
        return _mix(jnp.asarray(weights, jnp.float32), actions)


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
    state = runner.env.reset(reset_key)
    out = {k: [] for k in ("obs", "cond", "reward", "next_obs", "done", "terminated", "success")}
    start = time.perf_counter()
    for t in range(steps):
        key, step_key = jax.random.split(key)
        obs = np.asarray(state.obs["state"])
        weights = np.asarray(behaviour(obs, t, step_key), np.float32)
        state = runner.env.step(state, runner.act(state, weights))
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


@dataclass(frozen=True)
class EpisodeResults:
    """One episode per world."""

    success: np.ndarray  # [B] bool
    returns: np.ndarray  # [B]
    time_to_success: np.ndarray  # [B] seconds of simulated time to the first success; nan if never
    length: np.ndarray  # [B] control steps
    weights: np.ndarray  # [T, B, K] the weights used while each episode lasted (nan after it ended)
    seconds: float  # wall clock

    def summary(self) -> dict:
        hit = self.time_to_success[np.isfinite(self.time_to_success)]
        return {
            "episodes": int(self.success.size),
            "success": int(self.success.sum()),
            "return_mean": float(self.returns.mean()),
            "return_std": float(self.returns.std()),
            "time_to_success_s": float(hit.mean()) if hit.size else None,
            "episode_length_mean": float(self.length.mean()),
            "mean_weights": np.nanmean(self.weights, axis=(0, 1)).round(4).tolist(),  # every episode lasts >= 1 step
            "wall_clock_s": round(self.seconds, 2),
        }


def run_episodes(runner: SceneRunner, behaviour: Behaviour, key: jax.Array, max_steps: int) -> EpisodeResults:
    """Play one episode in each world (seed i of `key` for world i) for at most `max_steps` steps."""
    key, reset_key = jax.random.split(key)
    state = runner.env.reset(reset_key)
    b = runner.num_worlds
    alive = np.ones(b, bool)
    success = np.zeros(b, bool)
    returns = np.zeros(b)
    length = np.zeros(b, int)
    first_success = np.full(b, np.nan)
    weights_log = []
    dt = runner.scene.config.frame_skip * 0.002
    start = time.perf_counter()
    for t in range(max_steps):
        key, step_key = jax.random.split(key)
        weights = np.asarray(behaviour(np.asarray(state.obs["state"]), t, step_key), np.float32)
        weights_log.append(np.where(alive[:, None], weights, np.nan))
        state = runner.env.step(state, runner.act(state, weights))
        reward, done = np.asarray(state.reward), np.asarray(state.done)
        hit = np.asarray(state.metrics["success"]) > 0
        returns += np.where(alive, reward, 0.0)
        length += alive
        newly = alive & hit & ~success
        first_success[newly] = (t + 1) * dt
        success |= alive & hit
        alive &= ~done
        if not alive.any():
            break
    return EpisodeResults(success, returns, first_success, length, np.stack(weights_log), time.perf_counter() - start)

