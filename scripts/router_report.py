"""The shipped routers in one table, read from their metrics.json: the world model's k-step prediction errors on
held-out rollouts (k = 1, 5, 20), the selected round's success and return, and the training time.

    python scripts/router_report.py            # markdown, as pasted into README.md
    python scripts/router_report.py --routers-dir runs/router_all_shipped

Nothing is re-run: the figures are those `metaworld-x train router` measured and wrote, on the machine its
metrics.json names. The k-step errors are those of the world model trained on expert data alone
(`k_step_expert_data`) and after the fine-tune rounds on the router's own rollouts (`k_step_after_finetune`).
"latent" is the mean squared error of the predicted latent over the variance of the encoded held-out states (1: off
by as much as the states differ from each other); "reward" is the mean absolute error of the predicted reward per
step (the task rewards lie in [0, 1]).
"""

import json
from dataclasses import dataclass
from pathlib import Path

import tyro

from metaworld_x.errors import UserError
from metaworld_x.paths import ROUTER_DIR

K_STEPS = ("1", "5", "20")


@dataclass(frozen=True)
class Args:
    routers_dir: Path = ROUTER_DIR
    """Folder of router folders (`<task>/metrics.json`)."""


def k_step_cells(errors: dict | None) -> list[str]:
    """'latent / reward' for each k, or '-' where that stage was not measured."""
    if not errors:
        return ["-"] * len(K_STEPS)
    return [f"{errors[k]['latent_mse_relative']:.2f} / {errors[k]['reward_mae']:.3f}" for k in K_STEPS]


def report_row(metrics: dict) -> list[str]:
    model = metrics.get("world_model") or {}
    selected = metrics.get("selected") or {}
    seconds = metrics.get("seconds") or {}
    success = f"{selected['success']}/{selected['episodes']}" if selected else "-"
    ret = f"{selected['return_mean']:.0f}" if selected else "-"
    train_s = seconds.get("training_total")
    return [metrics["task"], *k_step_cells(model.get("k_step_expert_data")),
            *k_step_cells(model.get("k_step_after_finetune")), success, ret,
            f"{train_s / 60:.1f}" if train_s is not None else "-"]


def main(args: Args) -> None:
    files = sorted(Path(args.routers_dir).glob("*/metrics.json"))
    if not files:
        raise UserError(f"no router metrics in {args.routers_dir}; train one with `metaworld-x train router --task T`")
    metrics = [json.loads(f.read_text()) for f in files]
    rows = [report_row(m) for m in metrics]
    machines = sorted({m.get("machine", "?") for m in metrics})
    header = ["task", *(f"k={k} expert data" for k in K_STEPS), *(f"k={k} after fine-tune" for k in K_STEPS),
              "success", "return", "training (min)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\nk-step cells: latent MSE over the held-out latents' variance / reward MAE per step. "
          f"Measured on: {'; '.join(machines)}")


if __name__ == "__main__":
    try:
        main(tyro.cli(Args))
    except UserError as error:
        raise SystemExit(f"error: {error}") from None
