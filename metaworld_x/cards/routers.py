"""The router cards: router/README.md, one card per router/<name>/ folder after a summary table; the one router
of all tasks (router/all/) has a card of its own kind, with a row per task."""

from __future__ import annotations

from pathlib import Path

from metaworld_x.cards.cells import GENERATED, artifact_folders, minutes, num, ratio, read_json
from metaworld_x.cards.limits import ALL_ROUTERS, ROUTER_LIMITS


def _round(evaluation: dict) -> str:
    r = evaluation.get("round")
    return "start" if r == -1 else str(r)


def _weights(evaluation: dict, names: list[str], least: float = 0.005) -> str:
    weights = evaluation.get("mean_weights") or []
    pairs = sorted(((w, n) for w, n in zip(weights, names) if w >= least), reverse=True)
    return ", ".join(f"{n} {w:.2f}" for w, n in pairs) or "—"


def _router_limits(task: str, metrics: dict, names: list[str]) -> list[str]:
    limits = []
    selected = metrics.get("selected") or metrics.get("final") or {}
    if selected.get("success") is not None and selected["success"] < selected.get("episodes", 0):
        limits.append(f"{selected['episodes'] - selected['success']} of {selected['episodes']} evaluation "
                      "episodes failed.")
    weights = selected.get("mean_weights") or []
    if weights and max(weights) == 1.0:
        limits.append(f"Runs one expert ({names[weights.index(1.0)]}) at weight 1 throughout its evaluation: "
                      "it selects an expert, it does not compose them.")
    matched = [name for name, variant in (metrics.get("ablations") or {}).items()
               if name != "full" and variant.get("evals")
               and max(e.get("success", 0) for e in variant["evals"]) >= selected.get("success", 0) > 0]
    if matched:
        limits.append("Matched by its ablations " + ", ".join(f"`{name}`" for name in matched) + " on this task's "
                      "evaluation, so what it adds there is not measured by success.")
    limits.extend(ROUTER_LIMITS.get(task, ()))
    limits.extend(ALL_ROUTERS)
    return limits


def one_router_card(folder: Path) -> str:
    """The card of the one router of all tasks (router/all/, `train router --all`)."""
    metrics, router = read_json(folder / "metrics.json"), read_json(folder / "router.json")
    names = [e["name"] for e in router.get("experts") or []]
    config, train_config = router.get("config", {}), metrics.get("config") or {}
    selected = metrics.get("selected_evaluation") or {}
    out = [f"## {folder.name}", ""]
    out.append(f"**What it does.** One network for {len(router.get('tasks', {}))} catalog tasks: reads the robot's state "
               f"in the task's scene and the instruction's text embedding, and weighs the {len(names)} installed experts' "
               f"actions at every control step. State: {router.get('state_layout', 'not recorded')}. Network: "
               f"{router.get('obs_size', '?')} state + {router.get('text_size', '?')} text inputs → "
               f"{'-'.join(str(h) for h in config.get('hidden', []))} → {len(names)} weights ({config.get('output', '?')}), "
               f"weights under {config.get('min_weight', '?')} dropped. Files: `router.msgpack`, `router.json`, `world_model/`.")
    out.append("")
    out.append("**Data.** Rollouts of these experts in every task's scene (no human data): "
               + ", ".join(f"{e['name']} `{e.get('hash', '?')}`" for e in router.get("experts") or []) + ". "
               "Priors over the experts from the packaged text encoder, one per task (a sequence's per sub-goal).")
    out.append("")
    seconds = metrics.get("seconds") or {}
    out.append(f"**Training.** One world model on every task's rollouts; the router fitted to every task's prior, then "
               f"in imagination under the decaying prior KL, then {train_config.get('finetune_rounds', '?')} round(s) on its "
               f"own rollouts in every scene; {num(metrics.get('env_steps'))} env steps, "
               f"{minutes(seconds.get('training_total'))} of training and {minutes(seconds.get('evaluation'))} of evaluation"
               f" on {metrics.get('machine', 'a machine not recorded')}.")
    ablations = metrics.get("ablations") or {}
    out += ["", "```bash", "metaworld-x train router --all" + (" --ablations" if ablations else ""), "```", ""]
    out.append(f"**Evaluation** (`metaworld-x eval router --seed {train_config.get('seed', 0)}`; shipped: round "
               f"{_round(selected)} of " + ", ".join(_round(e) for e in metrics.get("evals") or []) + "):")
    out += ["", "| task | success | return | time to success | weights |", "|---|---|---|---|---|"]
    for task, row in (selected.get("tasks") or {}).items():
        tts = row.get("time_to_success_s")
        out.append(f"| {task} | {ratio(row)} | {num(row.get('return_mean'), 1)} ± {num(row.get('return_std'), 1)} | "
                   f"{'—' if tts is None else f'{tts:.2f} s'} | {_weights(row, names)} |")
    out.append("")
    if ablations:
        from metaworld_x.routing.one_router_ablations import comparison_table

        out.append("**Beside its ablations** (success and return per task, the same seeds): `scripted` runs each "
                   "sub-goal's expert alone, switched as the sub-goal is reached (other tasks: the prior's top expert); "
                   "`no_vlm` is trained without the language prior, `no_world_model` by REINFORCE on real rollouts "
                   "from the same start with as many environment steps. Then, for fetch, door and push, a router "
                   "trained on that task alone without its own expert:")
        out += ["", *comparison_table(metrics), ""]
    out.append("**Limits.**")
    skipped = metrics.get("skipped_tasks") or {}
    out += [f"- Not trained on {task}: it {why}." for task, why in skipped.items()]
    failed = [t for t, row in (selected.get("tasks") or {}).items() if row.get("success", 0) < row.get("episodes", 0)]
    if failed:
        out.append(f"- Fails some or all episodes of {', '.join(failed)}.")
    later = [e for e in metrics.get("evals") or [] if e.get("round", -1) > selected.get("round", -1)]
    if later:
        out.append("- Its rounds in imagination scored no more successes on real episodes ("
                   + ", ".join(f"round {_round(e)}: {ratio(e)}" for e in later)
                   + f", against {ratio(selected)} for round {_round(selected)}), so round {_round(selected)} ships.")
    below = _below_scripted(selected, (ablations.get("scripted") or {}).get("evaluation") or {})
    if below:
        out.append("- Below the scripted baseline on " + "; ".join(below) + ".")
    out.append(f"- {ALL_ROUTERS[0]}")
    out.append("")
    return "\n".join(out)


def _below_scripted(router: dict, scripted: dict) -> list[str]:
    """Per task where the router does worse than the scripted baseline: what each scored (success, else the return,
    as the card prints it: a return equal to one decimal is not below)."""
    below = []
    for task, row in (router.get("tasks") or {}).items():
        base = (scripted.get("tasks") or {}).get(task)
        if base is None:
            continue
        if row["success"] < base["success"]:
            below.append(f"{task} ({row['success']}/{row['episodes']} against {base['success']}/{base['episodes']})")
        elif row["success"] == base["success"] and round(row["return_mean"], 1) < round(base["return_mean"], 1):
            below.append(f"{task}'s return ({row['return_mean']:.1f} against {base['return_mean']:.1f})")
    return below


def router_card(folder: Path) -> str:
    """The card of one router folder (router/<name>/)."""
    metrics, router = read_json(folder / "metrics.json"), read_json(folder / "router.json")
    if "tasks" in router:
        return one_router_card(folder)
    task = metrics.get("task") or router.get("task") or folder.name
    experts = router.get("experts") or metrics.get("experts") or []
    names = [e["name"] for e in experts]
    config = router.get("config", {})
    instruction = metrics.get("instruction") or router.get("instruction")
    out = [f"## {folder.name}", ""]
    out.append(f"**What it does.** Reads the robot's state and the instruction \"{instruction}\" and weighs the "
               f"{len(names)} installed experts' actions at every control step in the `{metrics.get('scene') or router.get('scene')}` "
               f"scene. Success: {metrics.get('success_criterion') or router.get('success_criterion') or 'not recorded'}. "
               f"Network: {router.get('obs_size', '?')} state + {router.get('text_size', '?')} text inputs → "
               f"{'-'.join(str(h) for h in config.get('hidden', []))} → {len(names)} weights ({config.get('output', '?')}), "
               f"weights under {config.get('min_weight', '?')} dropped. Files: `router.msgpack`, `router.json`, "
               "`world_model/`, `curves.png`, `weights.png`.")
    out.append("")
    out.append("**Data.** Rollouts of these experts in the task's scene (no human data): "
               + ", ".join(f"{e['name']} `{e.get('hash', '?')}`" for e in experts) + ". "
               f"Prior over the experts from `{router.get('prior_source', '?')}`"
               + (" (text only, no image)" if (router.get("prior_scorer") or {}).get("sees_image") is False else "")
               + ": " + _weights({"mean_weights": router.get("prior") or []}, names, least=0.05) + ".")
    out.append("")
    train_config = metrics.get("config") or {}
    command = f"metaworld-x train router --task {train_config.get('task', task)}"
    if train_config.get("ablations"):
        command += " --ablations"
    if train_config.get("seed"):
        command += f" --seed {train_config['seed']}"
    seconds = metrics.get("seconds") or {}
    out.append(f"**Training.** World model, then the router in imagination under the decaying prior KL, then "
               f"{train_config.get('finetune_rounds', '?')} rounds on its own rollouts; {num(metrics.get('env_steps'))} "
               f"env steps, {minutes(seconds.get('training_total'))} of training "
               f"({minutes(metrics.get('wall_clock_s'))} wall clock with evaluations) on "
               f"{metrics.get('machine', 'a machine not recorded')}.")
    out += ["", "```bash", command, "```", ""]
    selected = metrics.get("selected") or {}
    episodes = selected.get("episodes", train_config.get("eval_episodes", 10))
    eval_command = f"metaworld-x eval router --per-task --task {task} --seed {train_config.get('seed', 0)}"
    if episodes != 10:
        eval_command += f" --episodes {episodes}"
    out.append(f"**Evaluation** (`{eval_command}` for the shipped router; the rounds as training evaluated them):")
    out += ["", "| round | env steps | success | return | time to success | weights |", "|---|---|---|---|---|---|"]
    for evaluation in metrics.get("evals") or []:
        mark = "**" if evaluation.get("round") == selected.get("round") else ""
        tts = evaluation.get("time_to_success_s")
        out.append(f"| {mark}{_round(evaluation)}{mark} | {num(evaluation.get('env_steps'))} | "
                   f"{ratio(evaluation)} | {num(evaluation.get('return_mean'), 1)} ± "
                   f"{num(evaluation.get('return_std'), 1)} | {'—' if tts is None else f'{tts:.2f} s'} | "
                   f"{_weights(evaluation, names)} |")
    out += ["", f"Shipped: round {_round(selected)} (bold)." if selected else "", ""]
    ablations = metrics.get("ablations") or {}
    if len(ablations) > 1:
        out += ["Ablations (same seeds; success after each round):", "", "| variant | env steps | success |", "|---|---|---|"]
        for name, variant in ablations.items():
            series = ", ".join(ratio(e) for e in variant.get("evals") or [])
            out.append(f"| `{name}` | {num(variant.get('env_steps'))} | {series} |")
        out.append("")
    k_step = (metrics.get("world_model") or {}).get("k_step_after_finetune") or {}
    if k_step:
        cells = " | ".join(f"k={k}: {v['latent_mse_relative']:.2f} / {v['reward_mae']:.3f}" for k, v in k_step.items())
        out += [f"World model on held-out rollouts (latent error over the latents' variance / reward error per step): {cells}.", ""]
    out.append("**Limits.**")
    out += [f"- {line}" for line in _router_limits(task, metrics, names)]
    out.append("")
    return "\n".join(out)


ROUTERS_INTRO = """# Shipped routers

One folder per router, written by `metaworld-x train router` and read by `metaworld-x eval router` and
`metaworld-x play`:

| file | what it holds |
|---|---|
| `router.msgpack` | the router network's parameters (flax msgpack, sha256 in `router.json`) |
| `router.json` | config, input sizes, the ordered expert set (name and policy hash of each), the task, scene, instruction and its text embedding, the prior and which scorer made it, how each expert's observation is built, library versions |
| `world_model/` | the world model the router was last trained in (its own config and checksum) |
| `metrics.json` | world-model k-step errors, the evaluation after each training round, the ablations, wall clock per stage, the machine |
| `curves.png` | world-model loss; imagined return and the decaying prior weight; real return against environment steps |
| `weights.png` | expert weights over an evaluation episode |

A folder is replaced as a whole, so a killed run never leaves half a router. A router is refused when the
installed experts differ from the ones it was trained with: installing a new expert means retraining the
routers (`scripts/retrain_routers.sh`). How training works and why: [`docs/design-notes.md`](../docs/design-notes.md)."""


def routers_readme(router_dir: Path) -> str:
    folders = artifact_folders(router_dir)
    rows = ["| router | instruction | success | return | time to success | weights | training |", "|---|---|---|---|---|---|---|"]
    for folder in folders:
        m, r = read_json(folder / "metrics.json"), read_json(folder / "router.json")
        if "tasks" in r:  # the one router of all tasks: its totals, per task on its card
            s = m.get("selected_evaluation") or {}
            rows.append(f"| [{folder.name}](#{folder.name}) | each task's own ({len(r['tasks'])} tasks) | {ratio(s)} | "
                        f"{num(s.get('return_mean'), 1)} | — | per task | "
                        f"{minutes((m.get('seconds') or {}).get('training_total'))} |")
            continue
        s = m.get("selected") or m.get("final") or {}
        names = [e["name"] for e in r.get("experts") or m.get("experts") or []]
        tts = s.get("time_to_success_s")
        rows.append(f"| [{folder.name}](#{folder.name}) | {m.get('instruction') or r.get('instruction')} | "
                    f"{ratio(s)} | {num(s.get('return_mean'), 1)} | "
                    f"{'—' if tts is None else f'{tts:.2f} s'} | {_weights(s, names)} | "
                    f"{minutes((m.get('seconds') or {}).get('training_total'))} |")
    cards = [router_card(folder) for folder in folders]
    summary = ("Seed 0, 10 episodes, `metaworld-x eval router --per-task --task TASK --seed 0` (the one router, all/:"
               " `metaworld-x eval router --seed 0`); machines on each card.")
    return "\n\n".join([GENERATED, ROUTERS_INTRO, "\n".join(rows), summary] + cards).rstrip() + "\n"
