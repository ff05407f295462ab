"""Every shipped expert under each perturbation suite, in one table (and every shipped router with --routers).

    python scripts/audit_robustness.py                                   # experts, seed 0, 10 episodes
    python scripts/audit_robustness.py --routers --max-push --json-out robustness.json

A cell is the successes k/n of `metaworld-x eval expert SKILL --perturb SUITE` (episodes on the clip) or, for a
router, of `metaworld-x eval router --task TASK --perturb SUITE` (its trained wording); the suites are
`metaworld_x.envs.perturb.SUITES`. On the clip an episode also ends when a keypoint strays `max_deviation` from the
clip where the clip has it, so a shove that moves a robot that stays up counts as a failure there; `--starts clip
home` adds the episodes from the home pose with the clip re-anchored onto the robot at every step, as a router runs
an expert, where only the pose counts ("home k/n"; "—" where the expert's props rule home starts out).
`--max-push` adds, for each locomotion expert, the largest shove (change of root speed, m/s) it survives in 9
episodes of 10 (success: its episode runs to the end), found by bisection over shoves of exactly that speed at the
push suite's times, from the start kind `--push-start`. The goals the table is read against: stand, walk, run, sit
and crawl at 9/10 or better under each single suite and 8/10 under all; carry, push, door and both reaches at 8/10
under each.
"""

import json
import math
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import tyro

from metaworld_x.atomic import atomic_path
from metaworld_x.envs.perturb import SUITES, perturb_suite
from metaworld_x.errors import UserError
from metaworld_x.experts.specs import EXPERTS
from metaworld_x.experts.training import evaluate_expert
from metaworld_x.machine import describe_machine
from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR

LOCOMOTION = ("stand", "walk", "run", "sit", "crawl")
SURVIVAL_RATE = 0.9  # "survives": at least this share of the episodes succeed


@dataclass(frozen=True)
class Args:
    seed: int = 0
    """Seed of the episodes (and of the perturbations drawn in them)."""
    episodes: int = 10
    """Episodes per expert (or router) and suite."""
    steps: int | None = None
    """Steps per episode; default each expert's evaluation length and each router's."""
    suites: tuple[str, ...] = tuple(SUITES)
    """Suites to run, in column order."""
    skills: tuple[str, ...] = ()
    """Experts to audit; default every one in `experts_dir`."""
    experts_dir: Path = EXPERTS_DIR
    """Folder of expert folders (`<skill>/policy.json`, ...)."""
    routers: bool = False
    """Also audit every shipped router in `router_dir`."""
    router_dir: Path = ROUTER_DIR
    """Folder of router folders (`<task>/router.json`)."""
    starts: tuple[Literal["clip", "home"], ...] = ("clip",)
    """Episode starts a cell counts: on the clip (the `success: k/10` line), and/or from home as a router starts it."""
    max_push: bool = False
    """Also bisect the largest shove each locomotion expert survives."""
    push_start: Literal["clip", "home"] = "home"
    """Where the bisection's episodes start: home (re-anchored: only a fall or a lost pose ends one) or the clip."""
    push_limit: float = 2.0
    """Top of the bisection (m/s); an expert that survives it is reported as surviving at least this."""
    push_tolerance: float = 0.05
    """Width (m/s) at which the bisection stops."""
    json_out: Path | None = None
    """Also write the table as JSON here, rewritten after each row ("complete": false until the end)."""


def _count(result: dict | None) -> str:
    return "—" if result is None else f"{result['success']}/{result['episodes']}"


def _cell(result: dict) -> str:
    clip = _count(result) if "success" in result else None
    if "home" not in result:
        return clip
    return f"home {_count(result['home'])}" if clip is None else f"{clip}, home {_count(result['home'])}"


def _expert_success(directory: Path, seed: int, episodes: int, steps: int | None, perturb,
                    starts=("clip",)) -> dict:
    """{"success", "episodes", "falls"} on the clip (if asked), and under "home" from home (None: impossible)."""
    metrics = evaluate_expert(directory, seed=seed, episodes=episodes, steps=steps, perturb=perturb,
                              other_starts="home" in starts)
    keep = lambda m: None if m is None else {k: m[k] for k in ("success", "episodes", "falls")}  # noqa: E731
    result = keep(metrics) if "clip" in starts else {}
    if "home" in starts:
        result["home"] = keep(metrics.get("from_home"))
    return result


def _router_success(folder: Path, experts_dir: Path, seed: int, episodes: int, steps: int | None, suite: str) -> dict:
    from metaworld_x.routing.evaluation import evaluate_router

    with tempfile.TemporaryDirectory() as plots:  # the weight plots are not what this audit is for
        report = evaluate_router(folder, experts_dir, None, episodes, seed, steps, plots_dir=Path(plots),
                                 perturb=suite)
    row = report["rows"][0]
    return {"success": row["success"], "episodes": row["episodes"], "falls": row.get("falls")}


def largest_push(directory: Path, seed: int, episodes: int, steps: int | None, limit: float, tolerance: float,
                 start: str = "home") -> dict:
    """{"survives": m/s, "fails": m/s or None}: the bisection's bracket on the largest shove survived."""
    needed = math.ceil(SURVIVAL_RATE * episodes)

    def survives(speed: float) -> bool:
        config = replace(SUITES["push"], push_speed=(speed, speed))
        result = _expert_success(directory, seed, episodes, steps, config, (start,))
        result = result["home"] if start == "home" else result
        if result is None:
            raise SystemExit(f"error: {directory.name} cannot start from home; bisect with --push-start clip")
        return result["success"] >= needed

    if survives(limit):
        return {"survives": limit, "fails": None}
    low, high = 0.0, limit
    if not survives(low):
        return {"survives": None, "fails": low}
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (middle, high) if survives(middle) else (low, middle)
    return {"survives": round(low, 4), "fails": round(high, 4)}


def _write(path: Path | None, table: dict) -> None:
    if path is not None:
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps(table, indent=2))


def main(args: Args) -> None:
    started = time.perf_counter()
    try:
        suites = [s for s in args.suites if perturb_suite(s)]
    except UserError as error:
        raise SystemExit(f"error: {error}") from None
    if not args.starts:
        raise SystemExit("error: --starts needs clip, home or both")
    present = tuple(s for s in EXPERTS if (args.experts_dir / s / "policy.json").is_file())
    if unknown := [s for s in args.skills if s not in present]:
        raise SystemExit(f"no expert {', '.join(map(repr, unknown))} in {args.experts_dir}; there: "
                         f"{', '.join(present) or 'none'}")
    skills = args.skills or present
    table = {"machine": describe_machine(), "seed": args.seed, "episodes": args.episodes, "steps": args.steps,
             "cell": "successes over the episodes: an expert's on its clip and, under 'home', from home re-anchored"
                     " as a router runs it; a router's over its trained wording",
             "starts": list(args.starts), "push_start": args.push_start,
             "suites": {s: SUITES[s].describe() for s in suites}, "experts": {}, "routers": {}, "max_push_m_s": {},
             "complete": False}
    print(f"machine: {table['machine']}; {args.episodes} episodes per cell at seed {args.seed}")
    print("| | " + " | ".join(suites) + " | seconds |")
    print("|---" * (len(suites) + 2) + "|")
    for skill in skills:
        t0 = time.perf_counter()
        row = {s: _expert_success(args.experts_dir / skill, args.seed, args.episodes, args.steps, s, args.starts)
               for s in suites}
        table["experts"][skill] = row
        print(f"| {skill} | " + " | ".join(_cell(row[s]) for s in suites) + f" | {time.perf_counter() - t0:.0f} |",
              flush=True)
        _write(args.json_out, table)
    if args.routers:
        from metaworld_x.routing.evaluation import shipped_routers

        for folder in shipped_routers(args.router_dir):
            t0 = time.perf_counter()
            row = {s: _router_success(folder, args.experts_dir, args.seed, args.episodes, args.steps, s) for s in suites}
            table["routers"][folder.name] = row
            print(f"| router {folder.name} | " + " | ".join(_cell(row[s]) for s in suites)
                  + f" | {time.perf_counter() - t0:.0f} |", flush=True)
            _write(args.json_out, table)
    if args.max_push:
        print(f"\nlargest shove survived in {SURVIVAL_RATE:.0%} of episodes from {args.push_start}"
              f" (bisection to {args.push_tolerance} m/s):")
        for skill in (s for s in LOCOMOTION if s in skills):
            bracket = largest_push(args.experts_dir / skill, args.seed, args.episodes, args.steps, args.push_limit,
                                   args.push_tolerance, args.push_start)
            table["max_push_m_s"][skill] = bracket
            survived = "none" if bracket["survives"] is None else f"{bracket['survives']:.2f} m/s"
            above = "" if bracket["fails"] is None else f" (fails at {bracket['fails']:.2f})"
            print(f"{skill}: {survived}{above}" + (" or more" if bracket["fails"] is None else ""), flush=True)
            _write(args.json_out, table)
    table["complete"] = True
    table["seconds"] = round(time.perf_counter() - started)
    _write(args.json_out, table)
    print(f"{table['seconds']} s")


if __name__ == "__main__":
    main(tyro.cli(Args))
