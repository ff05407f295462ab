"""How long a training run took to reach its expert's quality goals: every checkpoint evaluated as `eval expert` does.

The speed goal "the walk expert reaches its quality goals within N minutes" is the wall clock to the first
checkpoint whose policy meets them. A run's periodic evaluation (16 episodes on its own backend, with the
exploration noise off) is not `metaworld-x eval expert`'s 10 seeded episodes from the clip and from home, so this
script exports each checkpoint's policy and evaluates it the same way, on the C engine, wherever the run trained
(a GPU run's checkpoints are evaluated on a CPU). One table, one run:

    python scripts/time_to_goal.py runs/walk [--episodes 10] [--seed 0] [--from-step 4000000]

Columns: environment steps; the run's wall clock at that checkpoint from the train command's start (the training
loop plus `perf/setup_s`: imports, building the environments and the first compilations), and the loop alone; the
multiplier λ; successes and falls from the clip and from home (or from the clip's first frame, where home starts are
impossible); tracking error; task return per 1000 steps; the goals missed. The last line names the first
checkpoint that meets every goal, and whether every later one does too.
"""

import tempfile
from dataclasses import dataclass
from pathlib import Path

import tyro

from metaworld_x.errors import UserError
from metaworld_x.experts.specs import expert_spec
from metaworld_x.experts.training import evaluate_expert
from metaworld_x.machine import describe_machine
from metaworld_x.experts.policy import from_checkpoint, save_policy
from metaworld_x.training import checkpoint
from metaworld_x.training.runlog import read_history


@dataclass(frozen=True)
class Args:
    run_dir: tyro.conf.Positional[Path]
    """A `metaworld-x train expert` run folder (`--run-dir`): checkpoints/ and metrics.jsonl."""
    episodes: int = 10
    """Episodes per start kind and checkpoint (`eval expert` and the shipped figures use 10)."""
    seed: int = 0
    """Seed of the episodes (the shipped figures use 0)."""
    from_step: int = 0
    """Skip checkpoints before this many environment steps (early ones cannot meet the goals and cost time)."""


def checkpoints(run_dir: Path, from_step: int) -> list[Path]:
    """The run's complete checkpoints at or after `from_step`, oldest first."""
    found = [p for p in sorted((run_dir / "checkpoints").glob("step_*")) if (p / checkpoint.META_FILE).is_file()]
    if not found:
        raise UserError(f"no checkpoints in {run_dir / 'checkpoints'}; point at a `metaworld-x train expert` "
                        "run folder (its --run-dir)")
    kept = [p for p in found if checkpoint.read_meta(p)["step"] >= from_step]
    if not kept:
        raise UserError(f"no checkpoint in {run_dir / 'checkpoints'} at or after {from_step:,} steps; the newest is "
                        f"{found[-1].name}: lower --from-step")
    return kept


def clock_at(history: list[dict], step: int) -> dict:
    """The run log's row written at `step` (a checkpoint follows its iteration's row), or {}."""
    return next((row for row in history if row["env_steps"] == step), {})


def evaluate_checkpoint(path: Path, skill: str, episodes: int, seed: int) -> dict:
    """`eval expert`'s figures for the policy in checkpoint `path`."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_policy(from_checkpoint(path), Path(tmp) / skill, {"skill": skill})
        return evaluate_expert(folder, spec=expert_spec(skill), seed=seed, episodes=episodes)


def first_meeting(met: list[bool]) -> tuple[int | None, bool]:
    """(index of the first checkpoint meeting every goal or None, whether every later one meets them too)."""
    first = next((i for i, ok in enumerate(met) if ok), None)
    return first, first is not None and all(met[first:])


def _minutes(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 60:.2f}"


def _starts(metrics: dict) -> str:
    other = metrics.get("from_home") or metrics.get("from_start") or {}
    clip = f"{metrics['success']}/{metrics['episodes']} ({metrics['falls']} falls)"
    return clip + (f" | {other['success']}/{other['episodes']} ({other['falls']} falls)" if other else " | —")


def main(args: Args) -> None:
    paths = checkpoints(args.run_dir, args.from_step)
    history = read_history(args.run_dir)
    meta = checkpoint.read_meta(paths[-1])
    skill = meta.get("expert", {}).get("skill")
    if skill is None:
        raise UserError(f"{args.run_dir} is not an expert's run (its checkpoints name no skill)")
    spec = expert_spec(skill)
    print(f"run: {args.run_dir} ({skill}); trained on: {meta.get('machine', 'not recorded')}; "
          f"evaluated on: {describe_machine()}; {args.episodes} episodes per start at seed {args.seed}")
    print("| env steps | min from start | min in loop | λ | clip | home or first frame | tracking | return /1000 "
          "| goals |")
    print("|---:|---:|---:|---:|---|---|---:|---:|---|")
    met = []
    for path in paths:
        step = checkpoint.read_meta(path)["step"]
        row = clock_at(history, step)
        loop = row.get("perf/wall_clock_s")
        total = loop + row["perf/setup_s"] if loop is not None and "perf/setup_s" in row else None
        metrics = evaluate_checkpoint(path, skill, args.episodes, args.seed)
        missed = spec.shortfalls(metrics)
        met.append((step, total, loop, not missed))
        lam = row.get("constraint/multiplier")
        print(f"| {step:,} | {_minutes(total)} | {_minutes(loop)} | {'—' if lam is None else f'{lam:.1f}'} "
              f"| {_starts(metrics)} | {metrics['tracking_error_m'] * 100:.1f} cm "
              f"| {metrics['task_return_per_1000_steps']:.0f} | {'; '.join(missed) or 'met'} |", flush=True)
    first, steady = first_meeting([ok for *_, ok in met])
    if first is None:
        print("no checkpoint meets every goal")
        return
    step, total, loop, _ = met[first]
    print(f"first checkpoint meeting every goal: {step:,} steps, {_minutes(total)} min from the command's start "
          f"({_minutes(loop)} min in the training loop); "
          + ("every later one meets them too" if steady else "a later one misses again"))


if __name__ == "__main__":
    try:
        main(tyro.cli(Args))
    except UserError as error:
        raise SystemExit(f"error: {error}") from None
