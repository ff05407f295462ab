"""The one-command path on motions no shipped expert uses: `metaworld-x train expert NAME --clip FILE` on DeepMimic
clips from the reference data (../shared/mocap/deepmimic), each timed from the command's start to its shipped expert.

    python scripts/bench_own_motion.py                          # 5 clips, 30 min of training each
    python scripts/bench_own_motion.py --clips jump --total-env-steps 2048 --num-envs 64   # a smoke run

One table: clip, successes out of 10 from the clip (the shipped expert's own evaluation, metrics.json), tracking
error, wall clock (retargeting, compilation, training, evaluation and shipping), and the machine.
"""

import json
import time
from dataclasses import dataclass
from pathlib import Path

import tyro

from metaworld_x.cli import main
from metaworld_x.errors import UserError
from metaworld_x.machine import describe_machine
from metaworld_x.paths import shared_dir

# DeepMimic's clips that no shipped expert is made from.
CLIPS = {
    "jump": "humanoid3d_jump.txt",
    "roll": "humanoid3d_roll.txt",
    "stealthy_walk": "humanoid3d_stealthy_walk.txt",
    "zombie_walk": "humanoid3d_zombie_walk.txt",
    "getup_faceup": "humanoid3d_getup_faceup.txt",
}


@dataclass(frozen=True)
class Args:
    clips: tuple[str, ...] = tuple(CLIPS)
    """Which clips to train on (names in CLIPS)."""
    max_minutes: float | None = 30.0
    """Training time per clip (the train command's --max-minutes); 0: no limit, the spec's step budget."""
    total_env_steps: int | None = None
    """Override the spec's step budget (a smoke run)."""
    num_envs: int | None = None
    """Override the number of parallel simulations (a smoke run)."""
    runs_dir: Path = Path("runs/own_motion")
    """Each clip's run goes to <runs-dir>/<clip>, its expert to <runs-dir>/<clip>/expert."""
    seed: int = 0
    """Training seed."""


def train_one(name: str, source: Path, args: Args) -> dict:
    """Run the one command on `source`; its row of the table."""
    run_dir = args.runs_dir / name
    command = ["train", "expert", f"own_{name}", "--clip", str(source), "--run-dir", str(run_dir), "--overwrite",
               "--out", str(run_dir / "expert"), "--no-video", "--seed", str(args.seed)]
    if args.max_minutes:
        command += ["--max-minutes", str(args.max_minutes)]
    if args.total_env_steps is not None:
        command += ["--total-env-steps", str(args.total_env_steps)]
    if args.num_envs is not None:
        command += ["--num-envs", str(args.num_envs), "--num-minibatches", str(min(8, args.num_envs))]
    started = time.perf_counter()
    status = main(command)
    seconds = time.perf_counter() - started
    if status != 0:
        raise UserError(f"training on {name} ended with exit status {status}")
    metrics = json.loads((run_dir / "expert" / "metrics.json").read_text())
    return {"clip": name, "success": f"{metrics['success']}/{metrics['episodes']}",
            "tracking error": f"{metrics['tracking_error_m'] * 100:.1f} cm", "wall clock": f"{seconds / 60:.1f} min",
            "steps": f"{metrics['training']['env_steps']:,}"}


def table(rows: list[dict], machine: str) -> str:
    header = ["clip", "success", "tracking error", "steps", "wall clock", "machine"]
    cells = [[str(row.get(key, machine)) for key in header] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths)), "-|-".join("-" * w for w in widths)]
    lines += [" | ".join(c.ljust(w) for c, w in zip(cell, widths)) for cell in cells]
    return "\n".join(line.rstrip() for line in lines)


def run(args: Args) -> str:
    shared = shared_dir()
    if shared is None:
        raise UserError("the reference data ../shared (mocap) is absent; set METAWORLD_X_SHARED to its folder")
    unknown = [name for name in args.clips if name not in CLIPS]
    if unknown:
        raise UserError(f"unknown clip(s) {', '.join(unknown)}; clips: {', '.join(CLIPS)}")
    rows = [train_one(name, shared / "mocap" / "deepmimic" / CLIPS[name], args) for name in args.clips]
    return table(rows, describe_machine())


if __name__ == "__main__":
    try:
        print(run(tyro.cli(Args)))
    except UserError as error:
        raise SystemExit(f"error: {error}") from None
