"""The training loop: `make_train(config, make_env, options) -> train(key)`.

Collection depends on the backend (scan on mjx, Python over mujoco.batch on
cpu); everything else is shared: the jitted update, the NaN guard with
rollback, evaluation, checkpoints that resume exactly (from the newest one
that verifies), and the run's log. What a run builds once is `trainer.Trainer`;
where it starts (resumed, from another run or a shipped expert, afresh) is
`start`.
"""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from metaworld_x.machine import describe_machine
from metaworld_x.training import checkpoint
from metaworld_x.training.collect import EpisodeTracker
from metaworld_x.training.config import PPOConfig, RunOptions
from metaworld_x.training.devices import agreed, gather, is_main_process, replicated, shard_envs, to_host
from metaworld_x.training.runlog import RunLog, plot_curve
from metaworld_x.training.start import Start, config_record, resume_point, starting_point
from metaworld_x.training.trainer import Trainer, build_trainer
from metaworld_x.training.update import TrainingState

MAX_CONSECUTIVE_ROLLBACKS = 3


@dataclass
class TrainResult:
    state: TrainingState
    history: list[dict]
    run_dir: Path | None
    rollbacks: list[str]


class NonFiniteError(RuntimeError):
    """Training produced NaN or Inf repeatedly even after rolling back."""


def make_train(config: PPOConfig, make_env: Callable[[int], Any],
               options: RunOptions = RunOptions()) -> Callable[[jax.Array], TrainResult]:
    """Build the training function.

    Args:
      config: PPO settings.
      make_env: num_envs -> environment with reset(key), step(state, action), backend,
        observation_sizes, action_size.
      options: where the run is kept, how it starts (resume, init_from) and when it stops.
    """
    resume_from = resume_point(options)  # before the slow set-up, to fail at once
    trainer = build_trainer(config, make_env, options)

    def train(key: jax.Array) -> TrainResult:
        return _train_from(trainer, starting_point(trainer, key, resume_from))

    return train


@dataclass(frozen=True)
class _Iteration:
    """One iteration's collection and update, before the update is kept or rolled back."""

    env_state: Any
    tracker: EpisodeTracker
    state: TrainingState
    """The training state after the update."""
    loss_metrics: dict
    env_metrics: dict
    finite: bool
    """Whether the update and its metrics are finite."""
    collect_started: float
    update_started: float
    """`time.perf_counter()` when collection and the update began."""


@dataclass
class _Clock:
    """The run's wall clock, continued across a resumed run's commands."""

    started: float
    """`time.perf_counter()` when this command's training loop began."""
    before: float
    """Seconds the run's earlier commands trained (their last `perf/wall_clock_s`)."""
    setup_s: float | None
    """Seconds before the training loop, summed over the run's commands (None: the command's start is unknown)."""
    last: float
    """`time.perf_counter()` when the last kept iteration ended."""

    @classmethod
    def of(cls, started: float, history: list[dict], command_started: float | None) -> "_Clock":
        previous = history[-1] if history else {}
        setup_s = None
        if command_started is not None:
            setup_s = started - command_started + previous.get("perf/setup_s", 0.0)
        return cls(started, previous.get("perf/wall_clock_s", 0.0), setup_s, started)

    def lap(self, iteration: _Iteration, steps: int) -> dict[str, float]:
        """A kept iteration's perf/* scalars; the next one's steps per second count from now."""
        now = time.perf_counter()
        scalars = {
            "perf/steps_per_second": steps / max(now - self.last, 1e-9),
            "perf/collect_s": iteration.update_started - iteration.collect_started,
            "perf/update_s": now - iteration.update_started,
            "perf/wall_clock_s": now - self.started + self.before,
        }
        if self.setup_s is not None:
            scalars["perf/setup_s"] = self.setup_s
        self.last = now
        return scalars


def _train_from(trainer: Trainer, start: Start) -> TrainResult:
    """Iterate from `start` to the end of the budget or past `options.stop_at`, logging and checkpointing."""
    config, options = trainer.config, trainer.options
    main = is_main_process()  # the one process that writes the run's files
    log = None
    if options.run_dir and main:
        log = RunLog(options.run_dir, resume_step=start.resumed_from, tensorboard=options.tensorboard)
    # the machine, so that a wall clock read from the run later (scripts/time_to_goal.py) names where it ran
    meta = {"config": config_record(config), "machine": describe_machine(), **(options.extra_meta or {})}
    state = jax.device_put(start.state, replicated(trainer.mesh))
    env_state, tracker = trainer.place_simulations(start.env_state, start.tracker)
    rollbacks: list[str] = []
    consecutive = 0
    bar = _progress(config, int(state.env_steps), options.progress and main)
    started = time.perf_counter()
    history = log.history() if log is not None else []
    clock = _Clock.of(started, history, options.started_at)
    while int(state.iteration) < config.num_iterations:
        step = _collect_and_update(trainer, state, env_state, tracker)
        env_state, tracker = step.env_state, step.tracker
        if not step.finite:
            consecutive += 1
            state = _rolled_back(state, step, rollbacks, consecutive)
            continue
        consecutive = 0
        state = step.state
        scalars = _scalars(trainer, step, clock)
        history.append({"env_steps": int(state.env_steps), **scalars})
        if log is not None:
            log.write(int(state.env_steps), scalars)
        bar.update(config.steps_per_iteration)
        bar.set_postfix_str(_postfix(scalars))
        iteration = int(state.iteration)
        # process 0's clock decides for every process, so that all stop after the same iteration
        out_of_time = options.stop_at is not None and agreed(time.perf_counter() >= options.stop_at)
        last = iteration == config.num_iterations or out_of_time
        if options.run_dir is not None and (last or (config.checkpoint_every and iteration % config.checkpoint_every == 0)):
            _save_checkpoint(trainer, state, env_state, tracker, scalars, meta, main)
        if out_of_time and iteration < config.num_iterations:
            print(f"time limit reached after {int(state.env_steps)} environment steps; --resume continues")
            break
    bar.close()
    if log is not None:
        log.close()
        plot_curve(history, Path(options.run_dir) / "curve.png", title=str(options.run_dir))
    # on this process's host, so that what follows (shipping) can run on one process alone
    return TrainResult(to_host(state), history, Path(options.run_dir) if options.run_dir else None, rollbacks)


def _collect_and_update(trainer: Trainer, state: TrainingState, env_state, tracker: EpisodeTracker) -> _Iteration:
    """An unroll of every simulation with the current policy, and the update it gives."""
    config, mesh = trainer.config, trainer.mesh
    key_collect = jax.random.fold_in(state.key, 1)
    collect_started = time.perf_counter()
    env_state, tracker, rollout, env_metrics = trainer.collect(
        state.params, state.normalizer, env_state, tracker, key_collect
    )
    env_state, tracker = trainer.place_simulations(env_state, tracker)
    jax.block_until_ready(rollout)
    update_started = time.perf_counter()
    rollout = shard_envs(rollout, mesh, env_axis=1, num_envs=config.num_envs)
    rollout = rollout.replace(final_obs=shard_envs(rollout.final_obs, mesh, 0, config.num_envs))
    measured_error = env_metrics.get("env/imitation/tracking_error", jnp.zeros(()))
    new_state, loss_metrics, finite = trainer.update(state, rollout, measured_error)
    return _Iteration(env_state, tracker, new_state, loss_metrics, env_metrics, bool(finite), collect_started,
                      update_started)


def _rolled_back(state: TrainingState, step: _Iteration, rollbacks: list[str], consecutive: int) -> TrainingState:
    """The last good state, to skip a non-finite update with; recorded in `rollbacks`, and a NonFiniteError once
    `MAX_CONSECUTIVE_ROLLBACKS` updates in a row were."""
    culprit = _nonfinite_names({**step.loss_metrics, **step.env_metrics})
    message = (
        f"iteration {int(state.iteration)}: non-finite {', '.join(culprit) or 'parameters'};"
        " rolled back to the last good state and skipped this batch"
    )
    rollbacks.append(message)
    print(f"warning: {message}")
    if consecutive >= MAX_CONSECUTIVE_ROLLBACKS:
        raise NonFiniteError(
            f"{consecutive} consecutive non-finite updates ({message}); lower learning_rate or"
            " check the environment's reward terms"
        )
    # a fresh exploration key so the same batch is not drawn again
    return state.replace(key=jax.random.fold_in(state.key, 7919))


def _scalars(trainer: Trainer, step: _Iteration, clock: _Clock) -> dict[str, float]:
    """A kept iteration's logged scalars: environment and loss metrics, timings, the episodes that ended, and the
    evaluation where one is due."""
    config, state, tracker = trainer.config, step.state, step.tracker
    timings = clock.lap(step, config.steps_per_iteration)
    scalars = {k: float(v) for k, v in {**step.env_metrics, **step.loss_metrics}.items()}
    scalars.update(timings)
    if float(tracker.ended_count) > 0:
        scalars["episode/return"] = float(tracker.ended_return / tracker.ended_count)
        scalars["episode/length"] = float(tracker.ended_length / tracker.ended_count)
    iteration = int(state.iteration)
    if trainer.evaluate is not None and (iteration % config.eval_every == 0 or iteration == config.num_iterations):
        # every process evaluates the same episodes on its own, so that none waits on the others meanwhile
        scalars.update(trainer.evaluate(*to_host((state.params, state.normalizer, jax.random.fold_in(state.key, 2)))))
    return scalars


def _save_checkpoint(trainer: Trainer, state: TrainingState, env_state, tracker: EpisodeTracker, scalars: dict,
                     meta: dict, main: bool) -> None:
    """Every simulation's state gathered from all processes; the main process writes it and prunes old ones."""
    payload = gather({"training": state, "env": trainer.snapshot(env_state), "tracker": tracker})
    # this iteration's evaluation (none where it was not evaluated), by which `prune` keeps the best
    scores = {k: scalars[k] for k in checkpoint.RANKED_BY if k in scalars}
    folder = Path(trainer.options.run_dir) / "checkpoints"
    if main:
        checkpoint.save(folder, int(state.env_steps), payload, {**meta, "evaluation": scores})
        checkpoint.prune(folder, trainer.config.keep_checkpoints)


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
