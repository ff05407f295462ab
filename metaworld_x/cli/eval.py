"""`metaworld-x eval expert SKILL`: measure a shipped expert over 10 seeded episodes."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro


@dataclass(frozen=True)
class Eval:
    """Evaluate a shipped expert: success over 10 episodes, keypoint tracking error, task return, falls."""

    what: tyro.conf.Positional[Literal["expert"]]
    """What to evaluate."""
    skill: tyro.conf.Positional[str]
    """Expert skill (a folder in experts/)."""
    seed: int = 0
    """Seed of the 10 evaluation episodes."""
    expert_dir: Path | None = None
    """The expert's folder; default experts/<skill>."""
    json_out: Path | None = None
    """Also write the figures to this JSON file."""

    def run(self) -> None:
        from metaworld_x.expert_training import evaluate_expert
        from metaworld_x.paths import EXPERTS_DIR

        metrics = evaluate_expert(self.expert_dir or EXPERTS_DIR / self.skill, seed=self.seed)
        print(f"success: {metrics['success']}/{metrics['episodes']}")
        print(f"tracking error: {metrics['tracking_error_m'] * 100:.1f} cm (mean keypoint, relative to the root)")
        print(f"task return: {metrics['task_return']:.1f} ({metrics['task_return_per_1000_steps']:.1f} per 1000 steps)")
        print(f"falls: {metrics['falls']}")
        if self.json_out is not None:
            self.json_out.write_text(json.dumps(metrics, indent=2))
