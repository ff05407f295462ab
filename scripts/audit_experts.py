"""Every shipped expert evaluated over many episodes, beside the 10-episode figures its metrics.json records.

Ten episodes at one seed cannot tell an expert that falls in 1 % of its starts from one that falls in 40 %: the
shipped crawl expert scored 9/10 from its clip at seed 0 and 3-6/10 at seeds 1-5. One table, one run:

    python scripts/audit_experts.py --episodes 50 --seed 7

`--experts-dir DIR` audits the experts in DIR/<skill>/ instead, candidates before they replace the shipped ones.

Columns per start kind (on the clip; from home, as a router starts an expert; from the clip's first frame where
home starts are impossible; from another expert's handover): successes and falls over the episodes, tracking error.
"""

import json
import time
from dataclasses import dataclass
from pathlib import Path

import tyro

from metaworld_x.experts.specs import EXPERTS
from metaworld_x.experts.training import evaluate_expert
from metaworld_x.machine import describe_machine
from metaworld_x.paths import EXPERTS_DIR

STARTS = (("clip", None), ("home", "from_home"), ("first frame", "from_start"), ("handover", "from_handover"))


@dataclass(frozen=True)
class Args:
    episodes: int = 50
    """Episodes per start kind and expert."""
    seed: int = 7
    """Seed of the episodes (the shipped figures use 0)."""
    skills: tuple[str, ...] = ()
    """Experts to audit; default every one in `experts_dir`."""
    experts_dir: Path = EXPERTS_DIR
    """Folder of expert folders (`<skill>/metrics.json`, ...): the shipped experts/, or candidates to audit before
    shipping them (`train expert` writes one such folder with `--out DIR/<skill>`)."""


def _cell(result: dict | None) -> str:
    if not result:
        return "—"
    n = result["episodes"]
    return f"{result['success']}/{n} ({result['falls']} falls, {result['tracking_error_m'] * 100:.1f} cm)"


def _part(metrics: dict, key: str | None) -> dict | None:
    return metrics if key is None else metrics.get(key)


def main(args: Args) -> None:
    root = args.experts_dir
    present = tuple(s for s in EXPERTS if (root / s / "metrics.json").is_file())
    if unknown := [s for s in args.skills if s not in present]:
        raise SystemExit(f"no expert {', '.join(map(repr, unknown))} in {root}; there: "
                         f"{', '.join(present) or 'none'} (train one with `metaworld-x train expert SKILL`)")
    skills = args.skills or present
    print(f"experts: {root}; machine: {describe_machine()}; "
          f"{args.episodes} episodes per start kind at seed {args.seed}, against the recorded 10 at seed 0")
    print("| skill | " + " | ".join(name for name, _ in STARTS) + " | recorded (clip / home) | seconds |")
    print("|---" * (len(STARTS) + 3) + "|")
    for skill in skills:
        recorded = json.loads((root / skill / "metrics.json").read_text())
        started = time.perf_counter()
        fresh = evaluate_expert(root / skill, seed=args.seed, episodes=args.episodes)
        cells = [_cell(_part(fresh, key)) for _, key in STARTS]
        home = recorded.get("from_home") or recorded.get("from_start")
        before = f"{recorded['success']}/10 / {home['success']}/10" if home else f"{recorded['success']}/10"
        print(f"| {skill} | " + " | ".join(cells) + f" | {before} | {time.perf_counter() - started:.0f} |", flush=True)


if __name__ == "__main__":
    main(tyro.cli(Args))
