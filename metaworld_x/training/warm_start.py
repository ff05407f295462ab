"""Starting a training run from a shipped policy (experts/<skill>/), not from a checkpoint.

Run folders are scratch: a fine-tune of an expert whose run folder is gone
(a new machine, a fresh checkout) can only start from what experts/ ships,
the policy network and the observation statistics it was trained with. The
critics and the optimiser start fresh; the critics' inputs get statistics from
warm-up unrolls of the shipped policy, and the critics train alone for a while
before the policy moves. The multiplier starts where the expert's training
left it when its metrics.json records that, else at the config's initial value.
"""

from pathlib import Path

import jax.numpy as jnp
from brax.training.acme import running_statistics

from metaworld_x.errors import UserError
from metaworld_x.json_file import read_json_object
from metaworld_x.experts.policy import POLICY_FILE, SPEC_FILE, PolicyParams, load_policy


def is_shipped_policy(path: Path) -> bool:
    """Whether `path` is a folder that `save_policy` wrote (and not a run folder or checkpoint)."""
    path = Path(path)
    return path.is_dir() and (path / SPEC_FILE).is_file() and (path / POLICY_FILE).is_file()


# Critic-only iterations of a fine-tune from a shipped policy whose config does not set them. With none, a
# reach_one_hand fine-tune went from 16 of 16 evaluation episodes standing to 8 falls in 25 iterations:
# the fresh critics' advantages moved the policy (approx. KL 0.1-0.3 per update against 0.05 later).
FRESH_CRITIC_WARMUP_ITERATIONS = 30


def critic_warmup_iterations(configured: int | None, init_from: Path | None) -> int:
    """Critic-only iterations for a run: as configured, or by default `FRESH_CRITIC_WARMUP_ITERATIONS` when it
    starts from a shipped policy (fresh critics) and none otherwise (fresh policy, or a checkpoint's critics)."""
    if configured is not None:
        return configured
    return FRESH_CRITIC_WARMUP_ITERATIONS if init_from is not None and is_shipped_policy(init_from) else 0


def load_shipped(path: Path, observation_size: int, action_size: int) -> PolicyParams:
    """The policy in `path`, refused unless it fits the environment it is to keep training in."""
    policy, spec = load_policy(path)
    if spec["observation_size"] != observation_size or spec["action_size"] != action_size:
        raise UserError(
            f"the policy in {path} sees {spec['observation_size']} observations and makes {spec['action_size']} "
            f"actions, but this task has {observation_size} and {action_size}; start from a policy trained on the "
            "same observation layout (the same tracking settings), or train from scratch"
        )
    return policy


def shipped_action_scale(path: Path) -> float | None:
    """The action scale a shipped expert was trained at (its spec.json), or None if it does not say."""
    spec = Path(path) / "spec.json"
    return read_json_object(spec, "the expert's spec").get("action_scale") if spec.is_file() else None


def with_action_scale(policy: PolicyParams, trained_at: float, wanted: float) -> PolicyParams:
    """`policy` with its mean actions shrunk by trained_at / wanted, for a run whose actions map to servo targets
    at scale `wanted`: near zero action, where tanh is nearly linear, it then asks for the same targets as before.
    Saturated outputs still ask for more than they did; the fine-tune corrects them. The log-std half is kept."""
    ratio = trained_at / wanted
    weights, biases = list(policy.weights), list(policy.biases)
    half = biases[-1].shape[0] // 2
    weights[-1] = jnp.asarray(weights[-1]).at[:, :half].multiply(ratio)
    biases[-1] = jnp.asarray(biases[-1]).at[:half].multiply(ratio)
    return policy.replace(weights=tuple(weights), biases=tuple(biases))


def policy_network_params(policy: PolicyParams, template: dict) -> dict:
    """Brax MLP parameters (as `template`, the freshly initialised policy) holding `policy`'s layers."""
    layers = template["params"]
    names = sorted(layers, key=lambda name: int(name.rsplit("_", 1)[1]))
    shapes = [(layers[name]["kernel"].shape, layers[name]["bias"].shape) for name in names]
    given = [(w.shape, b.shape) for w, b in zip(policy.weights, policy.biases)]
    if shapes != given:
        raise UserError(f"the shipped policy's layers {given} differ from this run's {shapes}; match policy_hidden to it")
    return {"params": {
        name: {"kernel": jnp.asarray(w, layers[name]["kernel"].dtype), "bias": jnp.asarray(b, layers[name]["bias"].dtype)}
        for name, w, b in zip(names, policy.weights, policy.biases)
    }}


def _as_float(count) -> jnp.ndarray:
    """A running-statistics count as float32 (brax keeps it as a two-word UInt64 without x64)."""
    if hasattr(count, "hi"):
        return jnp.float32(count.hi) * jnp.float32(2.0**32) + jnp.float32(count.lo)
    return jnp.asarray(count, jnp.float32)


def shipped_sample_count(path: Path) -> int | None:
    """The environment steps a shipped expert was trained for (its metrics.json), or None if it does not say."""
    metrics = Path(path) / "metrics.json"
    if not metrics.is_file():
        return None
    steps = (read_json_object(metrics, "the expert's metrics").get("training") or {}).get("env_steps")
    return int(steps) if steps else None


def shipped_multiplier(path: Path) -> float | None:
    """The Lagrange multiplier a shipped expert's training ended with (its metrics.json), or None if not recorded
    (older experts' metrics do not record it)."""
    metrics = Path(path) / "metrics.json"
    if not metrics.is_file():
        return None
    value = (read_json_object(metrics, "the expert's metrics").get("training") or {}).get("multiplier")
    return float(value) if value is not None else None


def with_policy_statistics(
    normalizer: running_statistics.RunningStatisticsState, policy: PolicyParams, obs_key: str = "state",
    seen: int | None = None,
) -> running_statistics.RunningStatisticsState:
    """`normalizer` with the policy's own input statistics under `obs_key`, so it sees its inputs as it was
    trained to; later updates move them on from there, weighted by the count already seen.

    `seen`: the samples the shipped statistics came from (its training steps). Counted as one unroll, they
    were the new data's within a few iterations: a fine-tune's first 0.5M steps on a new clip moved the crawl
    expert's inputs so far that its crawl, held unchanged, fell in every evaluation episode.
    Counted as seen, new data moves them as slowly as it would have in the original run. One count serves
    every key, so the critics' statistics (from the warm-up unroll) are held alike."""
    mean, std = dict(normalizer.mean), dict(normalizer.std)
    mean[obs_key] = jnp.asarray(policy.obs_mean, mean[obs_key].dtype)
    std[obs_key] = jnp.asarray(policy.obs_std, std[obs_key].dtype)
    count = normalizer.count
    if seen is not None and seen > _as_float(count):
        count = _as_count(seen, count)
    variance = {key: jnp.square(value) * _as_float(count) for key, value in std.items()}
    return normalizer.replace(mean=mean, std=std, summed_variance=variance, count=count)


def _as_count(samples: int, like):
    """`samples` in the form of the running-statistics count `like` (brax's two-word UInt64 without x64)."""
    if hasattr(like, "hi"):
        return type(like)(hi=jnp.asarray(samples >> 32, jnp.uint32), lo=jnp.asarray(samples & 0xFFFFFFFF, jnp.uint32))
    return jnp.asarray(samples, jnp.asarray(like).dtype)
