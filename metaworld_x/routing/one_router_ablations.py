"""What the one router's parts add: its ablations and baselines, evaluated on every task with its seeds.

`train router --all --ablations` measures, beside the router it ships:

- no_vlm: the same data, world model and stages without the language prior: no prior fit (the router starts
  from fresh weights) and no KL to the prior in imagination;
- no_world_model: from the same prior-fitted start, REINFORCE on the router's own rollouts in every task's
  scene, with as many environment steps as the router used in all;
- scripted: no learning at all. A sequence runs each sub-goal's expert alone, switched as the task reports
  the sub-goal reached; any other task runs its prior's top expert alone;
- leave_one_out: for each `config.leave_one_out` pair (by default fetch, door and push), a router trained on
  that task alone with its dedicated expert (carry, door, push) taken out of the set. The door without a door
  expert has a published anchor (a return of 470 per 1000 steps).

Each result is written to the run folder when it is done, so a killed run resumes after it.
"""

from dataclasses import replace
from pathlib import Path

import jax
import numpy as np

from metaworld_x.routing.all_tasks import (
    AllTasks, evaluate_all, evaluate_behaviours, fit_one_router, load_tagged, make_one_router, prepare_all, train_all,
)
from metaworld_x.routing.pipeline import _read_json, write_json

def run_ablations(ctx: AllTasks, run_dir: Path, full: dict, experts_dir: Path, vlm_cache: Path | None = None) -> dict:
    """{variant: result} for metrics.json; each variant's evaluation has a row per task (`evaluate_all`)."""
    c = ctx.config
    no_vlm = train_all(ctx, run_dir, "no_vlm", replace(c.router, use_vlm=False), evaluate_start=False)
    out = {"no_vlm": {"env_steps": no_vlm["env_steps"], "evaluation": no_vlm["selected_evaluation"]}}
    out["no_world_model"] = _cached(run_dir / "no_world_model.json",
                                    lambda: train_all_model_free(ctx, run_dir, full["env_steps"], Path(full["evals"][0]["router"])))
    out["scripted"] = _cached(run_dir / "scripted.json", lambda: scripted_all(ctx))
    release_compiled(ctx)  # each leave-one-out run compiles its scene anew
    out["leave_one_out"] = {
        task: _cached(run_dir / f"without_{expert}.json",
                      lambda task=task, expert=expert: leave_one_out(ctx, run_dir, task, expert, experts_dir, vlm_cache))
        for task, _, expert in (pair.partition(":") for pair in c.leave_one_out)
        if task in [s.name for s in ctx.slots] and expert in ctx.experts.names
    }
    return out


def release_compiled(ctx: AllTasks) -> None:
    """Drop `ctx`'s compiled scenes and JAX's caches. Every compiled executable holds memory mappings, and one
    process that compiled all thirteen scenes and then more ran out of them (LLVM: "Cannot allocate memory")."""
    import gc

    ctx.runners.clear()
    jax.clear_caches()
    gc.collect()


def _cached(path: Path, compute) -> dict:
    """compute(), written to `path`; read back from there when a resumed run already has it."""
    result = _read_json(path)
    if result is None:
        result = compute()
        write_json(path, result)
    return result


def train_all_model_free(ctx: AllTasks, run_dir: Path, env_steps: int, start: Path) -> dict:
    """The no-world-model ablation: REINFORCE from the router in `start` on its own rollouts in every task's scene,
    `env_steps` environment steps in all, then evaluated on every task."""
    from metaworld_x.routing.checkpoint import load_router
    from metaworld_x.routing.learner import init_router_state, restart_stage, train_router
    from metaworld_x.routing.model_free import discounted_returns
    from metaworld_x.routing.rollouts import collect, sampled_behaviour

    c = ctx.config
    router = make_one_router(ctx, replace(c.router, use_world_model=False))
    mean, std = load_tagged(run_dir / "heldout.npz")[0].obs_statistics()
    state = init_router_state(router, jax.random.PRNGKey(c.seed), obs_mean=mean, obs_std=std)
    state = restart_stage(state, load_router(start, ctx.experts)[1])
    per_round = c.num_worlds * c.finetune_steps * len(ctx.slots)
    rounds = max(1, -(-env_steps // per_round))
    rng, seconds = np.random.default_rng(c.seed), 0.0
    for r in range(rounds):
        parts = []
        for i, slot in enumerate(ctx.slots):
            choices: list = []
            seed = c.seed + 300 + 97 * r + i
            data = collect(ctx.runner(slot, c.num_worlds), sampled_behaviour(router, state.params, slot.text, choices),
                           jax.random.PRNGKey(seed), c.finetune_steps)
            seconds += float(data["seconds"])
            # each task's returns standardised on their own: the tasks' reward scales differ, and one batch
            # baseline over all of them would rank tasks, not choices
            returns = discounted_returns(data["reward"], data["done"], router.config.discount).reshape(-1)
            obs = data["obs"].reshape(-1, ctx.obs_size)
            parts.append({"obs": obs, "text": slot.texts(obs.shape[0], rng),
                          "prior": slot.priors(obs), "choice": np.stack(choices).reshape(-1),
                          "return": (returns - returns.mean()) / (returns.std() + 1e-6)})
        rows = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        order = rng.permutation(rows["obs"].shape[0])
        batches = [{k: v[idx] for k, v in rows.items()} for idx in np.array_split(order, max(1, order.size // c.batch_size))]
        state, _ = train_router(router, state, batches)
        print(f"[no_world_model] round {r + 1} of {rounds}: {per_round} env steps", flush=True)
    evaluation = evaluate_all(ctx, router, state.params, c.seed)
    print(f"[no_world_model] {evaluation['success']}/{evaluation['episodes']} successes", flush=True)
    return {"env_steps": rounds * per_round, "evaluation": evaluation, "collect_seconds": seconds}


def scripted_all(ctx: AllTasks) -> dict:
    """The scripted baseline on every task, with the router's evaluation seeds: a sequence's state machine, or
    the prior's top expert alone."""
    from metaworld_x.routing.scripted import scripted_behaviour

    names = ctx.experts.names

    def chosen(slot) -> str:
        return "scripted state machine" if _sequential(slot) else names[int(np.argmax(slot.prior))]

    def behaviour_for(slot):
        if _sequential(slot):
            return scripted_behaviour(slot.scene.objective, names)
        one_hot = np.eye(len(names), dtype=np.float32)[names.index(chosen(slot))]
        return lambda obs, t, key: np.broadcast_to(one_hot, (obs.shape[0], one_hot.size))

    evaluation = evaluate_behaviours(ctx, behaviour_for, ctx.config.seed)
    for slot in ctx.slots:
        evaluation["tasks"][slot.name]["behaviour"] = chosen(slot)
    print(f"[scripted] {evaluation['success']}/{evaluation['episodes']} successes", flush=True)
    return {"env_steps": 0, "evaluation": evaluation}


def _sequential(slot) -> bool:
    return bool(getattr(slot.scene.objective, "subgoals", ()))


def leave_one_out(ctx: AllTasks, run_dir: Path, task: str, expert: str, experts_dir: Path,
                  vlm_cache: Path | None = None) -> dict:
    """A router trained, as the one router is, on `task` alone without `expert`; its evaluation on `task`, with
    the return per 1000 control steps (HumanoidBench's scale)."""
    alone = prepare_all(replace(ctx.config, tasks=(task,)), experts_dir, vlm_cache=vlm_cache, without=(expert,))
    progress, _ = fit_one_router(alone, run_dir / f"without_{expert}", resume=True)
    row = progress["selected_evaluation"]["tasks"][task]
    steps = alone.slots[0].eval_steps
    release_compiled(alone)
    print(f"[without {expert}] {task}: {row['success']}/{row['episodes']}, return {row['return_mean']:.1f}", flush=True)
    return {"task": task, "without": expert, "experts": list(alone.experts.names), "env_steps": progress["env_steps"],
            "eval_steps": steps, "return_per_1000_steps": row["return_mean"] * 1000 / steps, **row}


VARIANTS = (("router", None), ("scripted", "scripted"), ("no_vlm", "no_vlm"), ("no_world_model", "no_world_model"))


def comparison_table(metrics: dict) -> list[str]:
    """Markdown lines: per task, success and return of the shipped router beside each ablation's; then leave-one-out."""
    ablations = metrics.get("ablations") or {}
    if not ablations:
        return []
    columns = [(label, metrics.get("selected_evaluation") if key is None else (ablations.get(key) or {}).get("evaluation"))
               for label, key in VARIANTS]
    columns = [(label, evaluation) for label, evaluation in columns if evaluation]
    lines = ["| task | " + " | ".join(label for label, _ in columns) + " |", "|---|" + "---|" * len(columns)]
    for task in columns[0][1]["tasks"]:
        cells = []
        for _, evaluation in columns:
            row = evaluation["tasks"].get(task)
            cells.append("—" if row is None else f"{row['success']}/{row['episodes']}, {row['return_mean']:.1f}")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines.append("| **all** | " + " | ".join(f"**{e['success']}/{e['episodes']}**" for _, e in columns) + " |")
    loo = ablations.get("leave_one_out") or {}
    if loo:
        lines += ["", "| task | without | success | return per 1000 steps | experts it chose |", "|---|---|---|---|---|"]
        for task, row in loo.items():
            weights = sorted(zip(row.get("mean_weights") or [], row.get("experts") or []), reverse=True)
            chose = ", ".join(f"{name} {w:.2f}" for w, name in weights if w >= 0.005) or "—"
            lines.append(f"| {task} | {row['without']} | {row['success']}/{row['episodes']} | "
                         f"{row['return_per_1000_steps']:.1f} | {chose} |")
    return lines
