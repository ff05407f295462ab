"""Where a training run starts, in the order the modes take precedence:

- resumed: the newest checkpoint in its own run folder that verifies, exactly where it stopped (environments too);
- `init_from` a checkpoint or run folder: that run's training state, with fresh environments;
- `init_from` a shipped expert (experts/<skill>): its policy and input statistics, fresh critics and optimiser;
- afresh: new networks, and observation statistics from one unroll where observations are normalised.
"""

import shutil
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from brax.training.acme import running_statistics, specs

from metaworld_x.errors import UserError
from metaworld_x.json_file import jsonable
from metaworld_x.training import checkpoint, warm_start
from metaworld_x.training.collect import EpisodeTracker
from metaworld_x.training.config import PPOConfig, RunOptions
from metaworld_x.training.devices import is_main_process, replicated
from metaworld_x.training.networks import init_params
from metaworld_x.training.trainer import Trainer
from metaworld_x.training.update import TrainingState, make_optimizer


@dataclass(frozen=True)
class Start:
    """The state the training loop begins from."""

    state: TrainingState
    env_state: Any
    tracker: EpisodeTracker
    resumed_from: int | None = None
    """The environment step of the checkpoint a resumed run continues (None: not resumed)."""


def resume_point(options: RunOptions) -> Path | None:
    """The checkpoint a run continues from (None: it starts afresh), after refusing what would lose work: a resume
    with nothing usable to resume (which would start over and truncate metrics.jsonl), and a fresh run in a folder
    that holds another run's checkpoints (a later resume would continue the old run) unless told to overwrite."""
    run_dir = options.run_dir
    folder = Path(run_dir) / "checkpoints" if run_dir is not None else None
    if not options.resume:
        existing = checkpoint.listed(folder) if folder is not None else []
        if existing and not options.overwrite:
            raise UserError(
                f"{run_dir} holds the checkpoints of an earlier run (the newest is {existing[-1].name}); continue it"
                " with --resume, replace it with --overwrite, or choose another --run-dir"
            )
        if existing and is_main_process():
            shutil.rmtree(folder)
            shutil.rmtree(Path(run_dir) / "tensorboard", ignore_errors=True)
        return None
    if folder is None:
        raise UserError("resume needs the run directory to resume from (run_dir)")
    path, skipped = checkpoint.newest_verified(folder)
    for reason in skipped:
        print(f"warning: {reason}; passing over it to an older checkpoint")
    if path is not None or (options.init_from is not None and not skipped):  # a fine-tune's first start: nothing yet
        return path
    why = f"none of its checkpoints verifies ({'; '.join(skipped)})" if skipped else "it holds no checkpoint"
    raise UserError(
        f"nothing to resume in {run_dir}: {why}. Its metrics.jsonl is left as it was; start a new run without"
        " --resume (with --overwrite to replace this one) or in another --run-dir"
    )


def starting_point(trainer: Trainer, key: jax.Array, resume_from: Path | None) -> Start:
    """The run's first state: from `resume_from` (see `resume_point`), else as `trainer.options.init_from` says."""
    key, env_key = jax.random.split(key)
    share, init_from = trainer.share, trainer.options.init_from
    fresh = Start(
        state=initial_state(trainer, key),
        env_state=trainer.env.reset(share.per_world_keys(env_key) if trainer.several and share else env_key),
        tracker=EpisodeTracker.create(trainer.config.num_envs),
    )
    if resume_from is not None:
        return _resumed(trainer, fresh, resume_from)
    if init_from is not None and warm_start.is_shipped_policy(init_from):
        return _from_shipped_policy(trainer, fresh, key)
    if init_from is not None:
        return _from_checkpoint(fresh, Path(init_from))
    if trainer.config.normalize_observations:
        return warm_up_statistics(trainer, fresh, key)
    return fresh


def initial_state(trainer: Trainer, key: jax.Array) -> TrainingState:
    """New networks, optimiser and observation statistics; the multiplier at the config's initial value."""
    config = trainer.config
    key, params_key = jax.random.split(key)
    params = init_params(trainer.nets, params_key)
    obs_spec = {k: specs.Array(shape, jnp.float32) for k, shape in trainer.env.observation_sizes.items()}
    return TrainingState(
        params=params,
        opt_state=make_optimizer(config).init(params),
        normalizer=running_statistics.init_state(obs_spec),
        multiplier=jnp.asarray(config.constraint.initial_multiplier, jnp.float32),
        key=key,
        env_steps=jnp.zeros((), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32),
        iteration=jnp.zeros((), jnp.int32),
    )


def warm_up_statistics(trainer: Trainer, start: Start, key: jax.Array, unrolls: int = 1,
                       acting: Callable = lambda normalizer: normalizer) -> Start:
    """Observation statistics from `unrolls` unrolls of the policy before any update: reset states alone (all
    upright, nearly still) would give features such as the root height a tiny spread, and the first
    update would see them blown up. These steps are not counted as training. `acting`: the statistics the
    policy acts on meanwhile, given the ones gathered so far (a shipped policy: its own)."""
    state, env_state, tracker = jax.device_put(start.state, replicated(trainer.mesh)), start.env_state, start.tracker
    for unroll in range(unrolls):
        env_state, tracker = trainer.place_simulations(env_state, tracker)
        warmup_key = jax.device_put(jax.random.fold_in(key, 3 + unroll), replicated(trainer.mesh))  # as state.key is
        env_state, tracker, warmup, _ = trainer.collect(state.params, acting(state.normalizer), env_state, tracker,
                                                        warmup_key)
        state = state.replace(normalizer=running_statistics.update(state.normalizer, warmup.obs))
    return Start(state, env_state, EpisodeTracker.create(trainer.config.num_envs))


def _resumed(trainer: Trainer, fresh: Start, path: Path) -> Start:
    """The checkpoint at `path`, written with the same config: training state, environments and episode tracker."""
    config = trainer.config
    template = {"training": fresh.state, "env": trainer.snapshot(fresh.env_state), "tracker": fresh.tracker}
    restored, meta = checkpoint.restore(path, template)
    check_same_config(meta, config, path)
    # a checkpoint holds every simulation, whichever processes wrote it; this process takes its own
    share = trainer.share
    own = _rows(restored["env"], share.rows, config.num_envs, path) if trainer.several and share else restored["env"]
    return Start(restored["training"], trainer.restore_env(own), restored["tracker"], resumed_from=int(meta["step"]))


def _from_checkpoint(fresh: Start, init_from: Path) -> Start:
    """Another run's training state (its newest checkpoint, for a run folder), with this run's fresh environments."""
    source = checkpoint.latest(init_from / "checkpoints") or checkpoint.latest(init_from) or init_from
    state, _ = checkpoint.restore_part(source, "training", fresh.state)
    print(f"starting from {source} ({int(state.env_steps)} steps) with fresh environments")
    return Start(state, fresh.env_state, fresh.tracker)


def _from_shipped_policy(trainer: Trainer, fresh: Start, key: jax.Array) -> Start:
    """A shipped expert's policy and input statistics, fresh critics and optimiser, λ where its training left it."""
    config, env, init_from = trainer.config, trainer.env, trainer.options.init_from
    if not config.normalize_observations:
        raise UserError("starting from a shipped policy needs normalize_observations: it ships its statistics")
    policy = warm_start.load_shipped(init_from, env.observation_sizes["state"][0], env.action_size)
    trained_at, wanted = warm_start.shipped_action_scale(init_from), getattr(env, "action_scale", None)
    if trained_at is not None and wanted is not None and trained_at != wanted:
        policy = warm_start.with_action_scale(policy, trained_at, wanted)
        print(f"its mean actions shrunk by {trained_at} / {wanted}: trained at action scale {trained_at}")
    params = fresh.state.params.replace(policy=warm_start.policy_network_params(policy, fresh.state.params.policy))
    # The critics' statistics are counted as seen as often as the policy's (`with_policy_statistics`), so
    # they hardly move again: taken from one unroll, 20 of crawl's 300 steps, the episode's progress spread
    # 0.02 where it spreads 0.27, and the critics saw it clipped from a fifth of the way in. A whole
    # episode's worth of unrolls, of the policy acting as it was shipped, gives them what they will see.
    start = warm_up_statistics(trainer, Start(fresh.state.replace(params=params), fresh.env_state, fresh.tracker), key,
                               unrolls=_episode_unrolls(trainer),
                               acting=lambda normalizer: warm_start.with_policy_statistics(normalizer, policy))
    state = start.state.replace(normalizer=warm_start.with_policy_statistics(
        start.state.normalizer, policy, seen=warm_start.shipped_sample_count(init_from)))
    # The advantage weighs task against tracking by λ. Crawl's fine-tunes ran at λ 40-54; restarted at 1,
    # dual ascent (multiplier_lr 2 per metre of violation, ~4 cm over budget) needs ~500 iterations to
    # climb there, while the updates meanwhile trade the clip for the task.
    shipped_lambda = warm_start.shipped_multiplier(init_from)
    if shipped_lambda is not None and config.constraint.mode == "lagrangian":
        lam = min(max(shipped_lambda, 0.0), config.constraint.max_multiplier)
        state = state.replace(multiplier=jnp.asarray(lam, state.multiplier.dtype))
    print(f"starting from the shipped policy in {init_from}, with fresh critics and optimiser; the critics "
          f"train alone for the first {trainer.critic_warmup} iterations; λ starts at {float(state.multiplier):.2f}"
          + (" (where the expert's training left it)" if shipped_lambda is not None else ""))
    return Start(state, start.env_state, start.tracker)


def _episode_unrolls(trainer: Trainer) -> int:
    """Unrolls that span an episode (1 where the environment does not say how long one is)."""
    length = getattr(trainer.env, "episode_length", None)
    return max(1, -(-int(length) // trainer.config.unroll_length)) if length else 1


def _rows(tree, rows: slice, num_envs: int, path: Path):
    """Rows `rows` of every simulation's state in a checkpoint, which has num_envs of each."""

    def take(x):
        if np.shape(x)[:1] != (num_envs,):
            raise UserError(f"checkpoint {path} does not hold {num_envs} simulations; resume with the same num_envs")
        return x[rows]

    return jax.tree_util.tree_map(take, tree)


def config_record(config: PPOConfig) -> dict:
    """The config as a checkpoint's meta record holds it."""
    return asdict(config)


def check_same_config(meta: dict, config: PPOConfig, path: Path) -> None:
    """Refuse to resume from a checkpoint written with other settings than `config` (those that only say how the
    run is evaluated and kept aside)."""
    saved = _with_defaults(meta.get("config", {}), PPOConfig)
    current = config_record(config)
    ignored = {"total_env_steps", "eval_every", "checkpoint_every", "keep_checkpoints", "num_eval_envs", "eval_steps"}
    differ = sorted(k for k in current if k not in ignored and jsonable(saved.get(k)) != jsonable(current[k]))
    if differ:
        raise UserError(
            f"checkpoint {path} was written with a different config ({', '.join(differ)});"
            " resume with the same settings or start a new run directory"
        )


def _with_defaults(saved: dict, cls) -> dict:
    """A config record with the settings added to `cls` since it was written at their defaults, where that run
    ran them (nested configs, such as the constraint's, too)."""
    filled = dict(saved)
    for f in fields(cls):
        if f.default is not MISSING:
            filled.setdefault(f.name, f.default)
        elif f.default_factory is not MISSING:
            default = f.default_factory()
            if is_dataclass(default):
                filled[f.name] = _with_defaults(saved.get(f.name) or {}, type(default))
            else:
                filled.setdefault(f.name, default)
    return filled
