"""`metaworld-x eval router`: shipped routers over seeded episodes, and the ablation table.

A shipped router (router/<task>/) is loaded only if the installed experts are
exactly those it was trained with. Each instruction is resolved to its task
and must land on the router's own task; the router then reads that
instruction's text embedding, so a paraphrase is a real test of the wording.
"""

from pathlib import Path

import jax
import numpy as np

from metaworld_x.errors import UserError

# Wordings never used in training (neither the catalog's canonical instruction nor its paraphrases):
# one paraphrase and one with the parts in another order, per task.
PROBES: dict[str, tuple[str, str]] = {
    "fetch": ("get the box off the floor and set it down on the table",
              "carry the box to the table once you have walked over and picked it up"),
    "push": ("shove the crate until it sits on the red spot", "onto the red marker, push the box"),
    "door": ("open the door and step through it", "walk through the door after you walk up to it and push it open"),
    "sit": ("please be seated on the chair", "on the chair, sit down"),
    "stand": ("hold still and stay upright", "still, stand"),
    "run": ("dash ahead at full speed", "forward, run"),
    "crawl": ("go through the tunnel on hands and knees", "through the tunnel, crawl"),
    "reach": ("stretch your right arm out to the target", "with your right hand, reach for the target"),
}


def shipped_routers(router_root: Path) -> list[Path]:
    """Folders under router/ that hold a router (router.json)."""
    found = sorted(p.parent for p in Path(router_root).glob("*/router.json"))
    if not found:
        raise UserError(f"no trained router in {router_root}; train one with `metaworld-x train router --task 'stand still'`")
    return found


def evaluate_router(router_dir: Path, experts_dir: Path, instructions=None, episodes: int = 10, seed: int = 0,
                    steps: int | None = None, resolver=None) -> dict:
    """Success k/episodes, return, time to success and weights over time, for each instruction (default: the trained one)."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing.checkpoint import load_router
    from metaworld_x.routing.curves import plot_weights
    from metaworld_x.routing.experts import ExpertSet
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.routing.pipeline import installed_experts
    from metaworld_x.routing.rollouts import SceneRunner, router_behaviour, run_episodes
    from metaworld_x.routing.scene import build_expert_scene

    router_dir = Path(router_dir)
    dirs = installed_experts(experts_dir)
    experts = ExpertSet.load(dirs)
    router, params, record = load_router(router_dir, experts)
    scene, _ = build_expert_scene(make_task(record["task_env"]), dirs, dict(zip(experts.names, experts.specs)))
    runner = SceneRunner(scene, experts.params, episodes)
    steps = steps or int(record.get("eval_steps") or scene.config.episode_length)
    rows = []
    for instruction in instructions or [record["instruction"]]:
        if instruction == record["instruction"]:
            text, resolved = np.asarray(record["text_embedding"], np.float32), record["task"]
        else:
            resolver = resolver or TaskResolver()
            resolution = resolver.resolve(instruction)
            resolved = resolution.task.name
            text = resolver.embed([instruction])[0].astype(np.float32)
        if resolved != record["task"]:
            rows.append({"instruction": instruction, "resolved_task": resolved, "error": f"resolves to {resolved!r}, not {record['task']!r}"})
            continue
        results = run_episodes(runner, router_behaviour(router, params, text), jax.random.PRNGKey(seed + 10_000), steps)
        png = router_dir / ("weights.png" if instruction == record["instruction"] else f"weights_{len(rows)}.png")
        plot_weights(png, results.weights, experts.names, scene.config.frame_skip * 0.002,
                     f"{record['task']}: {instruction!r}")
        rows.append({"instruction": instruction, "resolved_task": resolved, **results.summary(), "weights_png": str(png)})
    return {"task": record["task"], "router_dir": str(router_dir), "experts": list(experts.names), "steps": steps, "rows": rows}


def _seconds(value) -> str:
    return "—" if value is None else f"{value:.2f} s"


def results_table(reports: list[dict]) -> str:
    """One line per (task, instruction): success k/n, return, time to success, mean expert weights."""
    lines = [f"{'task':<7} {'success':>7} {'return':>15} {'to success':>10}  mean weights  instruction"]
    for report in reports:
        for row in report["rows"]:
            if "error" in row:
                lines.append(f"{report['task']:<7} {'—':>7} {'—':>15} {'—':>10}  {row['error']}  {row['instruction']!r}")
                continue
            weights = " ".join(f"{n}={w:.2f}" for n, w in zip(report["experts"], row["mean_weights"]))
            lines.append(
                f"{report['task']:<7} {row['success']:>4}/{row['episodes']:<2} {row['return_mean']:>8.1f} ± {row['return_std']:<5.1f}"
                f" {_seconds(row['time_to_success_s']):>10}  {weights}  {row['instruction']!r}"
            )
    return "\n".join(lines)


def ablation_table(metrics: dict) -> str:
    """Variant, environment steps, final success and return, the best evaluation's success (what ships), and the
    environment steps of the first evaluation at >= 9/10 (sample efficiency)."""
    lines = [f"{'variant':<17} {'env steps':>9} {'final':>6} {'return':>7} {'best':>6} {'first >= 9/10 at':>16}  curve (env steps: return)"]
    for name, run in metrics.get("ablations", {}).items():
        evals = run.get("evals", [])
        if not evals:
            continue
        final = evals[-1]
        reached = next((e["env_steps"] for e in evals if e["success"] >= 0.9 * e["episodes"]), None)
        label = name + (f" ({run['expert']})" if "expert" in run else "")
        best = max(evals, key=lambda e: (e["success"], e["return_mean"]))
        curve = ", ".join(f"{e['env_steps']}: {e['return_mean']:.0f}" for e in evals)
        lines.append(
            f"{label:<17} {final['env_steps']:>9} {final['success']:>3}/{final['episodes']:<2} {final['return_mean']:>7.1f}"
            f" {best['success']:>3}/{best['episodes']:<2} {str(reached) if reached is not None else 'never':>16}  {curve}"
        )
    return "\n".join(lines)
