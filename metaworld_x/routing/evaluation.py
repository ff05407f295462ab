"""`metaworld-x eval router`: shipped routers over seeded episodes, and the ablation table.

A shipped router (router/<task>/, or the one router of all tasks in
router/all/, evaluated on one of its tasks at a time in that task's padded
scene) is loaded only if the installed experts are exactly those it was
trained with. Each instruction is resolved to its task
and must land on the router's own task; the router then reads that
instruction's text embedding, so a paraphrase is a real test of the wording.
With a planner (`MppiConfig`), the executed weights are MPPI's in the
router's shipped world model (router/<task>/world_model/), searched around
the router's own; the table, the JSON and the plot (weights_mppi.png) say so,
with how far the plan moved off the router.
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
    "walk_sit": ("stroll over to the chair and sit", "sit down on the chair once you have walked over to it"),
    "run_crawl": ("jog to the tunnel, then crawl under the roof", "crawl through the tunnel after you run to it"),
    "walk_reach": ("go to the ball, then put your right hand on it",
                   "touch the target with your right hand once you have walked over to it"),
    "rise_walk": ("stand up from the chair, then walk 3 metres forward", "walk forward 3 m after you get up from the chair"),
    "walk_push": ("head to the table and shove the crate onto the red marker",
                  "push the box onto the marker after walking to the table"),
    "door_sit": ("push the door open, go through and sit on the chair past it",
                 "sit on the chair beyond the door after you open the door and walk through"),
}


def shipped_routers(router_root: Path) -> list[Path]:
    """Folders under router/ that hold a per-task router (router.json; the one router of all tasks, router/all/,
    is not among them: `one_router`)."""
    from metaworld_x.routing.all_tasks import ALL_TASKS_DIR

    found = sorted(p.parent for p in Path(router_root).glob("*/router.json") if p.parent.name != ALL_TASKS_DIR)
    if not found:
        raise UserError(f"no trained router in {router_root}; train one with `metaworld-x train router --task 'stand still'`")
    return found


def evaluate_router(router_dir: Path, experts_dir: Path, instructions=None, episodes: int = 10, seed: int = 0,
                    steps: int | None = None, resolver=None, plan=None, plots_dir: Path | None = None,
                    perturb: str = "none", task: str | None = None) -> dict:
    """Success k/episodes, return, time to success and weights over time, for each instruction (default: the trained
    one); with `plan` (an MppiConfig), of the weights MPPI plans in the router's world model.

    The weight plots go to `plots_dir` (default the router's own folder): weights.png for the trained wording,
    weights_<i>.png for the i-th wording after it. `perturb`: the perturbation suite the scene runs under
    (`metaworld_x.envs.perturb.SUITES`). task: with the one router of all tasks (router/all/), the task to
    evaluate it on; a per-task router's is its own."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing.all_tasks import task_view
    from metaworld_x.routing.checkpoint import load_router, trained_experts
    from metaworld_x.routing.curves import plot_weights
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.routing.rollouts import SceneRunner, planned_behaviour, router_behaviour, run_episodes
    from metaworld_x.routing.scene import build_expert_scene

    router_dir = Path(router_dir)
    dirs = trained_experts(router_dir, experts_dir)
    experts = ExpertSet.load(dirs)
    router, params, record = load_router(router_dir, experts)
    record = task_view(record, task, router_dir)
    scene, _ = build_expert_scene(make_task(record["task_env"]), dirs, dict(zip(experts.names, experts.specs)),
                                  state_features=record["state_features"])
    runner = SceneRunner(scene, experts.params, episodes, perturb=perturb)
    steps = steps or int(record.get("eval_steps") or scene.config.episode_length)
    world_model = shipped_world_model(router_dir) if plan is not None else None
    plots_dir = Path(plots_dir or router_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
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
        key = jax.random.PRNGKey(seed + 10_000)
        if plan is None:
            results, extra = run_episodes(runner, router_behaviour(router, params, text), key, steps), {}
        else:
            executed = []
            behaviour = planned_behaviour(router, params, text, *world_model, plan, record=executed)
            results = run_episodes(runner, behaviour, key, steps)
            extra = {"planner": planner_departure(executed, results.weights)}
        stem = "weights" if plan is None else "weights_mppi"
        png = plots_dir / (f"{stem}.png" if instruction == record["instruction"] else f"{stem}_{len(rows)}.png")
        title = f"{record['task']}: {instruction!r}" + ("" if plan is None else "\nweights planned by MPPI in the world model")
        goals = getattr(scene.objective, "subgoals", ())
        marks = {"switches": results.switches(0),
                 "subgoals": list(zip((g.kind for g in goals), results.subgoal_times(0)))} if goals else {}
        plot_weights(png, results.weights, experts.names, scene.config.frame_skip * 0.002, title, **marks)
        if goals:
            from metaworld_x.routing.sequence_report import sequence_record

            extra["sequence"] = sequence_record(results, experts.names, scene.objective.subgoals)
        rows.append({"instruction": instruction, "resolved_task": resolved, **results.summary(), **extra, "weights_png": str(png)})
    return {"task": record["task"], "router_dir": str(router_dir), "experts": list(experts.names), "steps": steps,
            "weights_from": "the router" if plan is None else plan.describe(), "perturb": perturb, "rows": rows}


def shipped_world_model(router_dir: Path) -> tuple:
    """(model, params) of router/<task>/world_model/, the world model the router was last trained in."""
    from metaworld_x.world_model.checkpoint import load_world_model

    folder = router_dir / "world_model"
    if not (folder / "world_model.json").is_file():
        raise UserError(f"{router_dir} ships no world model to plan in ({folder} is missing); retrain the router"
                        " with `metaworld-x train router`, or evaluate it without --plan")
    model, params, _ = load_world_model(folder)
    return model, params


def planner_departure(executed: list, weights: np.ndarray) -> dict:
    """How far the executed weights moved off the router's, over the steps each episode lasted.

    executed: per step (router weights [B, K], executed weights [B, K]); weights: [T, B, K], nan after an episode ended."""
    alive = np.isfinite(weights[..., 0])  # [T, B]
    router = np.stack([r for r, _ in executed])[: len(weights)]
    planned = np.stack([w for _, w in executed])[: len(weights)]
    l1 = np.abs(planned - router).sum(axis=-1)[alive]
    return {"steps": int(alive.sum()), "steps_off_router": int((l1 > 1e-6).sum()), "mean_l1_from_router": float(l1.mean())}


def _seconds(value) -> str:
    return "—" if value is None else f"{value:.2f} s"


def results_table(reports: list[dict]) -> str:
    """One line per (task, instruction): success k/n, return, time to success, mean expert weights."""
    width = max([len("task"), *(len(r["task"]) for r in reports)])  # the sequences' names (walk_reach) are long
    lines = [f"{'task':<{width}} {'success':>7} {'return':>15} {'to success':>10}  mean weights  instruction"]
    for report in reports:
        for row in report["rows"]:
            if "error" in row:
                lines.append(f"{report['task']:<{width}} {'—':>7} {'—':>15} {'—':>10}  {row['error']}  {row['instruction']!r}")
                continue
            weights = " ".join(f"{n}={w:.2f}" for n, w in zip(report["experts"], row["mean_weights"]))
            if "planner" in row:
                p = row["planner"]
                weights = (f"MPPI: {weights} (off the router on {p['steps_off_router']}/{p['steps']} steps,"
                           f" mean L1 {p['mean_l1_from_router']:.2f})")
            lines.append(
                f"{report['task']:<{width}} {row['success']:>4}/{row['episodes']:<2} {row['return_mean']:>8.1f} ± {row['return_std']:<5.1f}"
                f" {_seconds(row['time_to_success_s']):>10}  {weights}  {row['instruction']!r}"
            )
            if "sequence" in row:
                from metaworld_x.routing.sequence_report import sequence_lines

                lines += [f"        {line}" for line in sequence_lines(row["sequence"])]
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
