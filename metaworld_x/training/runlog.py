"""A run's record: TensorBoard scalars, a JSON-lines history, a PNG curve.

The JSON-lines file is the source of truth: it is appended and flushed to
disk once per iteration, survives a killed run, and is trimmed back to the
checkpoint on resume so the curve has no duplicated steps.
"""

import json
import os
from pathlib import Path

from metaworld_x.atomic import save_figure, write_text

HISTORY_FILE = "metrics.jsonl"


def read_history(run_dir: Path) -> list[dict]:
    """A run's metrics.jsonl rows, oldest first ([] before its first iteration), without opening it for writing."""
    path = Path(run_dir) / HISTORY_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class RunLog:
    def __init__(self, run_dir: Path, resume_step: int | None = None, tensorboard: bool = True):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.history_path = self.run_dir / HISTORY_FILE
        if resume_step is None:
            self.history_path.unlink(missing_ok=True)
        else:
            self._trim(resume_step)
        self._writer = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(str(self.run_dir / "tensorboard"))

    def _trim(self, step: int) -> None:
        kept = [r for r in self.history() if r["env_steps"] <= step]
        write_text(self.history_path, "".join(json.dumps(r) + "\n" for r in kept))

    def write(self, env_steps: int, scalars: dict[str, float]) -> None:
        record = {"env_steps": int(env_steps), **{k: float(v) for k, v in scalars.items()}}
        with self.history_path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())  # a row older than the checkpoint that follows it is never lost with the power
        if self._writer is not None:
            for name, value in scalars.items():
                self._writer.add_scalar(name, float(value), int(env_steps))

    def history(self) -> list[dict]:
        return read_history(self.run_dir)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def plot_curve(history: list[dict], path: Path, title: str = "training") -> Path | None:
    """Return, success and the constraint over environment steps, as one PNG."""
    if not history:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("return", ["episode/return", "eval/return"]),
        ("success / tracking", ["eval/success_rate", "eval/tracking_error", "env/imitation/tracking_error"]),
        ("constraint", ["constraint/multiplier", "constraint/violation"]),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6))
    for ax, (label, keys) in zip(axes, panels):
        colours = {}
        for key in keys:
            points = [(r["env_steps"], r[key]) for r in history if key in r]
            if points:
                xs, ys = zip(*points)
                (line,) = ax.plot(xs, ys, label=key, marker="o" if key.startswith("eval/") else None, markersize=3)
                colours[key] = line.get_color()
        band = [(r["env_steps"], r["eval/success_low"], r["eval/success_high"]) for r in history
                if "eval/success_low" in r and "eval/success_rate" in colours]
        if band:  # the 95 % interval: 19-44 points wide over a 16-episode evaluation
            xs, lows, highs = zip(*band)
            ax.fill_between(xs, lows, highs, color=colours["eval/success_rate"], alpha=0.15,
                            label="success, 95 % interval")
        ax.set_title(label)
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path, dpi=110)
