"""The training loop: `make_train(config, make_env, run_dir) -> train(key)`.

Collection depends on the backend (scan on mjx, Python over mujoco.batch on
cpu); everything else is shared: the jitted update, the NaN guard with
rollback, evaluation, checkpoints that resume exactly (from the newest one
that verifies), and the run's log.
"""

import shutil
import time
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from brax.training.acme import running_statistics, specs

from metaworld_x.errors import UserError
from metaworld_x.machine import describe_machine
from metaworld_x.training import checkpoint, warm_start
from metaworld_x.training.collect import EpisodeTracker, make_loop_collector, make_scan_collector
from metaworld_x.training.config import PPOConfig
from metaworld_x.training.devices import (
    agreed,
    gather,
    is_main_process,
    make_mesh,
    process_share,
    replicated,
    shard_envs,
    to_host,
)
from metaworld_x.training.evaluate import make_evaluator
from metaworld_x.training.networks import init_params, make_networks
from metaworld_x.training.runlog import RunLog, plot_curve
from metaworld_x.training.update import TrainingState, make_optimizer, make_update

MAX_CONSECUTIVE_ROLLBACKS = 3


@dataclass
class TrainResult:
    state: TrainingState
    history: list[dict]
    run_dir: Path | None
    rollbacks: list[str]


class NonFiniteError(RuntimeError):
    """Training produced NaN or Inf repeatedly even after rolling back."""


def make_train(
    config: PPOConfig,
    make_env: Callable[[int], Any],
    run_dir: Path | None = None,
    resume: bool = False,
    progress: bool = True,
    tensorboard: bool = True,
    extra_meta: dict | None = None,
    init_from: Path | None = None,
    stop_at: float | None = None,
    started_at: float | None = None,
    overwrite: bool = False,
) -> Callable[[jax.Array], TrainResult]:
    """Build the training function.

    Args:
      config: PPO settings.
      make_env: num_envs -> environment with reset(key), step(state, action), backend,
        observation_sizes, action_size.
      run_dir: where checkpoints, metrics, TensorBoard files and the curve go (None: keep nothing).
      resume: continue from the newest checkpoint in run_dir that verifies (newer, corrupted ones are passed
        over with a warning); a UserError, with the run's metrics.jsonl untouched, where none does.
      init_from: a checkpoint (or a run directory: its newest) whose training state (networks, optimiser,
        normaliser, multiplier, step count) this run starts from, with fresh environments: a fine-tune whose
        task settings may differ. Or a shipped expert's folder (experts/<skill>): its policy and input
        statistics, with fresh critics, optimiser and multiplier (`warm_start`). A checkpoint in run_dir
        with `resume` takes precedence, so a killed fine-tune resumes where it stopped.
      stop_at: a `time.perf_counter()` deadline: the first iteration that ends after it is the last, with a
        checkpoint, so a run given minutes stops cleanly and `resume` continues it.
      started_at: the `time.perf_counter()` at which the command began. Every iteration then logs
        `perf/setup_s`, the seconds spent before the training loop (imports, building the environments, the
        first compilations), summed over a resumed run's commands, so that `perf/wall_clock_s + perf/setup_s`
        is the wall clock from the command's start (scripts/time_to_goal.py).
      overwrite: a fresh run (no `resume`) in a run_dir that holds checkpoints removes them, and the old run's
        TensorBoard files; without it such a run is refused, since a later resume would pick up the old run.
    """
    resume_from = _resume_point(run_dir, resume, overwrite, init_from)  # before the slow set-up, to fail at once
    mesh = make_mesh(config.num_devices)
    config.check_devices(mesh.size)
    # on the cpu backend each process steps its own rows of the batch (all of them where there is one process),
    # and the policy acts on them split over the mesh; mjx's jitted environment is split over it like the rest
    share = process_share(mesh, config.num_envs) if config.backend == "cpu" and mesh.size > 1 else None
    several = jax.process_count() > 1
    if jax.process_count() > 1 and init_from is not None and warm_start.is_shipped_policy(init_from):
        raise UserError("a multi-process run cannot start from a shipped policy (--init-from experts/...); start"
                        " the fine-tune in one process, or from a run folder's checkpoint")
    env = make_env(config.num_envs if share is None else share.count)
    eval_env = make_env(config.num_eval_envs) if config.eval_every else None
    nets = make_networks(
        env.observation_sizes, env.action_size, config.policy_hidden, config.value_hidden, config.normalize_observations
    )
    collect = make_scan_collector(env, nets, config) if env.backend == "mjx" else make_loop_collector(env, nets, config, share)
    # resolved for the update only: the run's recorded config keeps what was asked, so a resume matches it
    warmup = warm_start.critic_warmup_iterations(config.critic_warmup_iterations, init_from)
    update_config = replace(config, critic_warmup_iterations=warmup)
    update = jax.jit(make_update(update_config, nets), out_shardings=(replicated(mesh), replicated(mesh), replicated(mesh)))
    evaluate = make_evaluator(eval_env, nets, config.eval_steps) if eval_env is not None else None
    snapshot = getattr(env, "snapshot", lambda s: s)
    restore_env = getattr(env, "restore", lambda s: s)

    def place_simulations(env_state, tracker):
        """The per-simulation state split over the mesh, with the same shardings at every call (the training
        state is replicated likewise), so that the jitted collector compiles once rather than once per placement."""
        if env.backend == "mjx":  # the cpu backend's state lives in mujoco.batch, on the host
            env_state = shard_envs(env_state, mesh, 0, config.num_envs)
        return env_state, shard_envs(tracker, mesh, 0, config.num_envs)

    def initial_state(key) -> TrainingState:
        key, params_key = jax.random.split(key)
        params = init_params(nets, params_key)
        obs_spec = {k: specs.Array(shape, jnp.float32) for k, shape in env.observation_sizes.items()}
        return TrainingState(
            params=params,
            opt_state=make_optimizer(config).init(params),
            normalizer=running_statistics.init_state(obs_spec),
            multiplier=jnp.asarray(config.constraint.initial_multiplier, jnp.float32),
            key=key,
            env_steps=jnp.zeros((), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32),
            iteration=jnp.zeros((), jnp.int32),
        )

    def warm_up_statistics(state, env_state, tracker, key, unrolls: int = 1, acting=lambda normalizer: normalizer):
        """Observation statistics from `unrolls` unrolls of the policy before any update: reset states alone (all
        upright, nearly still) would give features such as the root height a tiny spread, and the first
        update would see them blown up. These steps are not counted as training. `acting`: the statistics the
        policy acts on meanwhile, given the ones gathered so far (a shipped policy: its own)."""
        state = jax.device_put(state, replicated(mesh))
        for unroll in range(unrolls):
            env_state, tracker = place_simulations(env_state, tracker)
            warmup_key = jax.device_put(jax.random.fold_in(key, 3 + unroll), replicated(mesh))  # placed as state.key is
            env_state, tracker, warmup, _ = collect(state.params, acting(state.normalizer), env_state, tracker, warmup_key)
            state = state.replace(normalizer=running_statistics.update(state.normalizer, warmup.obs))
        return state, env_state, EpisodeTracker.create(config.num_envs)

    def episode_unrolls() -> int:
        """Unrolls that span an episode (1 where the environment does not say how long one is)."""
        length = getattr(env, "episode_length", None)
        return max(1, -(-int(length) // config.unroll_length)) if length else 1

    def train(key: jax.Array) -> TrainResult:
        key, env_key = jax.random.split(key)
        state = initial_state(key)
        env_state = env.reset(share.per_world_keys(env_key) if several and share else env_key)
        tracker = EpisodeTracker.create(config.num_envs)
        resumed_from = None
        if resume_from is not None:
            path = resume_from
            template = {"training": state, "env": snapshot(env_state), "tracker": tracker}
            restored, meta = checkpoint.restore(path, template)
            _check_same_config(meta, config, path)
            # a checkpoint holds every simulation, whichever processes wrote it; this process takes its own
            own = _rows(restored["env"], share.rows, config.num_envs, path) if several and share else restored["env"]
            state, env_state, tracker = restored["training"], restore_env(own), restored["tracker"]
            resumed_from = int(meta["step"])
        elif init_from is not None and warm_start.is_shipped_policy(init_from):
            if not config.normalize_observations:
                raise UserError("starting from a shipped policy needs normalize_observations: it ships its statistics")
            policy = warm_start.load_shipped(init_from, env.observation_sizes["state"][0], env.action_size)
            trained_at, wanted = warm_start.shipped_action_scale(init_from), getattr(env, "action_scale", None)
            if trained_at is not None and wanted is not None and trained_at != wanted:
                policy = warm_start.with_action_scale(policy, trained_at, wanted)
                print(f"its mean actions shrunk by {trained_at} / {wanted}: trained at action scale {trained_at}")
            params = state.params.replace(policy=warm_start.policy_network_params(policy, state.params.policy))
            # The critics' statistics are counted as seen as often as the policy's (`with_policy_statistics`), so
            # they hardly move again: taken from one unroll, 20 of crawl's 300 steps, the episode's progress spread
            # 0.02 where it spreads 0.27, and the critics saw it clipped from a fifth of the way in. A whole
            # episode's worth of unrolls, of the policy acting as it was shipped, gives them what they will see.
            state, env_state, tracker = warm_up_statistics(
                state.replace(params=params), env_state, tracker, key, unrolls=episode_unrolls(),
                acting=lambda normalizer: warm_start.with_policy_statistics(normalizer, policy))
            state = state.replace(normalizer=warm_start.with_policy_statistics(
                state.normalizer, policy, seen=warm_start.shipped_sample_count(init_from)))
            # The advantage weighs task against tracking by λ. Crawl's fine-tunes ran at λ 40-54; restarted at 1,
            # dual ascent (multiplier_lr 2 per metre of violation, ~4 cm over budget) needs ~500 iterations to
            # climb there, while the updates meanwhile trade the clip for the task.
            shipped_lambda = warm_start.shipped_multiplier(init_from)
            if shipped_lambda is not None and config.constraint.mode == "lagrangian":
                lam = min(max(shipped_lambda, 0.0), config.constraint.max_multiplier)
                state = state.replace(multiplier=jnp.asarray(lam, state.multiplier.dtype))
            print(f"starting from the shipped policy in {init_from}, with fresh critics and optimiser; the critics "
                  f"train alone for the first {warmup} iterations; λ starts at {float(state.multiplier):.2f}"
                  + (" (where the expert's training left it)" if shipped_lambda is not None else ""))
        elif init_from is not None:
            source = checkpoint.latest(Path(init_from) / "checkpoints") or checkpoint.latest(Path(init_from))
            source = source or Path(init_from)
            state, _ = checkpoint.restore_part(source, "training", state)
            print(f"starting from {source} ({int(state.env_steps)} steps) with fresh environments")
        elif config.normalize_observations:
            state, env_state, tracker = warm_up_statistics(state, env_state, tracker, key)
        main = is_main_process()  # the one process that writes the run's files
        log = RunLog(run_dir, resume_step=resumed_from, tensorboard=tensorboard) if run_dir and main else None
        # the machine, so that a wall clock read from the run later (scripts/time_to_goal.py) names where it ran
        meta = {"config": _config_record(config), "machine": describe_machine(), **(extra_meta or {})}
        state = jax.device_put(state, replicated(mesh))
        env_state, tracker = place_simulations(env_state, tracker)
        rollbacks: list[str] = []
        consecutive = 0
        bar = _progress(config, int(state.env_steps), progress and main)
        t_last = t_start = time.perf_counter()
        history = log.history() if log is not None else []
        elapsed_before = history[-1].get("perf/wall_clock_s", 0.0) if history else 0.0
        setup_s = None
        if started_at is not None:
            setup_s = t_start - started_at + (history[-1].get("perf/setup_s", 0.0) if history else 0.0)
        while int(state.iteration) < config.num_iterations:
            key_collect = jax.random.fold_in(state.key, 1)
            t_collect = time.perf_counter()
            env_state, tracker, rollout, env_metrics = collect(
                state.params, state.normalizer, env_state, tracker, key_collect
            )
            env_state, tracker = place_simulations(env_state, tracker)
            jax.block_until_ready(rollout)
            t_update = time.perf_counter()
            rollout = shard_envs(rollout, mesh, env_axis=1, num_envs=config.num_envs)
            rollout = rollout.replace(final_obs=shard_envs(rollout.final_obs, mesh, 0, config.num_envs))
            measured_error = env_metrics.get("env/imitation/tracking_error", jnp.zeros(()))
            new_state, loss_metrics, finite = update(state, rollout, measured_error)
            if not bool(finite):
                culprit = _nonfinite_names({**loss_metrics, **env_metrics})
                message = (
                    f"iteration {int(state.iteration)}: non-finite {', '.join(culprit) or 'parameters'};"
                    " rolled back to the last good state and skipped this batch"
                )
                rollbacks.append(message)
                consecutive += 1
                print(f"warning: {message}")
                if consecutive >= MAX_CONSECUTIVE_ROLLBACKS:
                    raise NonFiniteError(
                        f"{consecutive} consecutive non-finite updates ({message}); lower learning_rate or"
                        " check the environment's reward terms"
                    )
                # a fresh exploration key so the same batch is not drawn again
                state = state.replace(key=jax.random.fold_in(state.key, 7919))
                continue
            consecutive = 0
            state = new_state
            now = time.perf_counter()
            scalars = {k: float(v) for k, v in {**env_metrics, **loss_metrics}.items()}
            scalars["perf/steps_per_second"] = config.steps_per_iteration / max(now - t_last, 1e-9)
            scalars["perf/collect_s"] = t_update - t_collect
            scalars["perf/update_s"] = now - t_update
            scalars["perf/wall_clock_s"] = now - t_start + elapsed_before
            if setup_s is not None:
                scalars["perf/setup_s"] = setup_s
            t_last = now
            if float(tracker.ended_count) > 0:
                scalars["episode/return"] = float(tracker.ended_return / tracker.ended_count)
                scalars["episode/length"] = float(tracker.ended_length / tracker.ended_count)
            iteration = int(state.iteration)
            if evaluate is not None and (iteration % config.eval_every == 0 or iteration == config.num_iterations):
                # every process evaluates the same episodes on its own, so that none waits on the others meanwhile
                scalars.update(evaluate(*to_host((state.params, state.normalizer, jax.random.fold_in(state.key, 2)))))
            history.append({"env_steps": int(state.env_steps), **scalars})
            if log is not None:
                log.write(int(state.env_steps), scalars)
            bar.update(config.steps_per_iteration)
            bar.set_postfix_str(_postfix(scalars))
            # process 0's clock decides for every process, so that all stop after the same iteration
            out_of_time = stop_at is not None and agreed(time.perf_counter() >= stop_at)
            last = iteration == config.num_iterations or out_of_time
            if run_dir is not None and (last or (config.checkpoint_every and iteration % config.checkpoint_every == 0)):
                payload = gather({"training": state, "env": snapshot(env_state), "tracker": tracker})
                # this iteration's evaluation (none where it was not evaluated), by which `prune` keeps the best
                scores = {k: scalars[k] for k in checkpoint.RANKED_BY if k in scalars}
                folder = Path(run_dir) / "checkpoints"
                if main:
                    checkpoint.save(folder, int(state.env_steps), payload, {**meta, "evaluation": scores})
                    checkpoint.prune(folder, config.keep_checkpoints)
            if out_of_time and iteration < config.num_iterations:
                print(f"time limit reached after {int(state.env_steps)} environment steps; --resume continues")
                break
        bar.close()
        if log is not None:
            log.close()
            plot_curve(history, Path(run_dir) / "curve.png", title=str(run_dir))
        # on this process's host, so that what follows (shipping) can run on one process alone
        return TrainResult(to_host(state), history, Path(run_dir) if run_dir else None, rollbacks)

    return train


def _resume_point(run_dir: Path | None, resume: bool, overwrite: bool, init_from: Path | None) -> Path | None:
    """The checkpoint a run continues from (None: it starts afresh), after refusing what would lose work: a resume
    with nothing usable to resume (which would start over and truncate metrics.jsonl), and a fresh run in a folder
    that holds another run's checkpoints (a later resume would continue the old run) unless told to overwrite."""
    folder = Path(run_dir) / "checkpoints" if run_dir is not None else None
    if not resume:
        existing = checkpoint.listed(folder) if folder is not None else []
        if existing and not overwrite:
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
    if path is not None or (init_from is not None and not skipped):  # a fine-tune's first start: nothing yet
        return path
    why = f"none of its checkpoints verifies ({'; '.join(skipped)})" if skipped else "it holds no checkpoint"
    raise UserError(
        f"nothing to resume in {run_dir}: {why}. Its metrics.jsonl is left as it was; start a new run without"
        " --resume (with --overwrite to replace this one) or in another --run-dir"
    )


def _rows(tree, rows: slice, num_envs: int, path: Path):
    """Rows `rows` of every simulation's state in a checkpoint, which has num_envs of each."""

    def take(x):
        if np.shape(x)[:1] != (num_envs,):
            raise UserError(f"checkpoint {path} does not hold {num_envs} simulations; resume with the same num_envs")
        return x[rows]

    return jax.tree_util.tree_map(take, tree)


def _config_record(config: PPOConfig) -> dict:
    return asdict(config)


def _check_same_config(meta: dict, config: PPOConfig, path: Path) -> None:
    saved = _with_defaults(meta.get("config", {}), PPOConfig)
    current = _config_record(config)
    ignored = {"total_env_steps", "eval_every", "checkpoint_every", "keep_checkpoints", "num_eval_envs", "eval_steps"}
    differ = sorted(k for k in current if k not in ignored and _jsonable(saved.get(k)) != _jsonable(current[k]))
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


def _jsonable(value):
    import json

    return json.loads(json.dumps(value, default=str))


def _nonfinite_names(metrics: dict) -> list[str]:
    return sorted(k for k, v in metrics.items() if not np.all(np.isfinite(np.asarray(v))))


def _postfix(scalars: dict) -> str:
    parts = []
    for key, label in (("episode/return", "ret"), ("eval/return", "eval"), ("constraint/multiplier", "λ")):
        if key in scalars:
            parts.append(f"{label} {scalars[key]:.3g}")
    return " ".join(parts)


def _progress(config: PPOConfig, start: int, enabled: bool):
    from tqdm.auto import tqdm

    total = config.num_iterations * config.steps_per_iteration
    return tqdm(total=total, initial=start, unit="step", unit_scale=True, disable=not enabled, dynamic_ncols=True)
