"""The expert cards: experts/README.md, one card per experts/<skill>/ folder after a summary table."""

from __future__ import annotations

import json
from pathlib import Path

from metaworld_x.cards.cells import GENERATED, artifact_folders, cm, millions, minutes, num, ratio, read_json
from metaworld_x.cards.limits import EXPERT_LIMITS


def _clip_metadata(motions_dir: Path, name: str) -> dict:
    """The `metadata` record of assets/motions/<name>.npz ({} if the clip is not there)."""
    import numpy as np

    path = motions_dir / f"{name}.npz"
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        return json.loads(str(data["metadata"])) if "metadata" in data.files else {}


def _expert_command(skill: str, spec: dict, training: dict) -> str:
    """The command that trains this folder's policy: the spec from scratch, or its last fine-tune stage."""
    ppo = spec.get("ppo", {})
    origin = training.get("initialised_from")
    if not origin:
        return f"metaworld-x train expert {skill}"
    source = origin.split()[0]
    if not source.startswith("experts/"):
        source = "RUN_DIR"  # a run folder that was not shipped; the card names it below
    flags = [f"--init-from {source}"]
    if ppo.get("total_env_steps"):
        flags.append(f"--total-env-steps {ppo['total_env_steps']}")
    if ppo.get("learning_rate") is not None:
        flags.append(f"--learning-rate {ppo['learning_rate']:g}")
    if ppo.get("desired_kl") is not None:
        flags.append(f"--desired-kl {ppo['desired_kl']:g}")
    return f"metaworld-x train expert {skill} " + " ".join(flags)


def _expert_rows(metrics: dict, spec: dict) -> list[tuple[str, dict]]:
    handover = spec.get("tracking", {}).get("handover_clip")
    starts = [("along the clip", metrics), ("from the home pose", metrics.get("from_home")),
              ("from the clip's first frame", metrics.get("from_start")),
              (f"handed over in `{handover}`", metrics.get("from_handover"))]
    return [(label, m) for label, m in starts if m]


def _return(evaluation: dict, spec: dict) -> str:
    """Task return per 1000 steps; none for a tracking-only expert (no objective)."""
    return num(evaluation.get("task_return_per_1000_steps")) if spec.get("objective") else "— (tracking only)"


def _expert_limits(skill: str, metrics: dict, spec: dict) -> list[str]:
    limits = []
    for goal in metrics.get("goals_missed") or []:
        limits.append(f"Misses its goal: {goal}.")
    for label, m in _expert_rows(metrics, spec):
        failed = m.get("episodes", 0) - m.get("success", 0)
        if failed:
            limits.append(f"{label.capitalize()}: {failed} of {m['episodes']} evaluation episodes failed "
                          f"({m.get('falls', 0)} by a fall or deviation).")
    tracking = spec.get("tracking", {})
    if tracking.get("handover_in_place"):
        limits.append(f"Starts only where `{tracking.get('handover_clip')}` leaves the robot: a router hands it over,"
                      " and never starts it from the home pose.")
    elif metrics.get("from_home") is None and metrics.get("from_start") is None:
        limits.append("Not evaluated from the home pose, where a router starts an expert.")
    elif not spec.get("tracking", {}).get("home_start_fraction") and metrics.get("from_home"):
        limits.append("Trained without home starts.")
    limits.extend(EXPERT_LIMITS.get(skill, ()))
    return limits or ["None measured beyond the figures above."]


def expert_card(folder: Path, motions_dir: Path) -> str:
    """The card of one expert folder (experts/<skill>/)."""
    metrics, spec, policy = read_json(folder / "metrics.json"), read_json(folder / "spec.json"), read_json(folder / "policy.json")
    skill = metrics.get("skill") or spec.get("skill") or folder.name
    training = metrics.get("training") or {}
    ppo = spec.get("ppo", {})
    constraint = ppo.get("constraint", {})
    out = [f"## {skill}", ""]
    description = spec.get("description") or policy.get("description")
    network = "-".join(str(h) for h in policy.get("hidden_sizes", []))
    out.append(f"**What it does.** {description[0].upper() + description[1:] if description else skill}: a policy "
               f"for the Unitree H1 (`{policy.get('variant', '?')}`) in the `{policy.get('scene', '?')}` scene that "
               f"follows its reference clip while it does the task. `{skill}/policy.msgpack` + `policy.json` "
               f"(`metaworld_x.experts.policy.load_policy`, `act`), `policy.onnx`; MLP {network or '?'} "
               f"({policy.get('activation', '?')}), {policy.get('observation_size', '?')} inputs, "
               f"{policy.get('action_size', '?')} servo targets at action scale {spec.get('action_scale', '?')}.")
    out.append("")
    clips = metrics.get("clips") or {name: None for name in spec.get("clips", [])}
    data = []
    for name, fingerprint in clips.items():
        meta = _clip_metadata(motions_dir, name)
        source = meta.get("source_file") or meta.get("source") or "unknown source"
        line = f"`{name}` ({source}; licence: {meta.get('licence', 'not recorded')}; {meta.get('attribution', '')})"
        data.append(line + (f", fingerprint `{fingerprint}`" if fingerprint else ""))
    out.append("**Data.** Imitates " + "; ".join(data) + ". Sources in "
               "[`assets/motions/ATTRIBUTION.md`](../assets/motions/ATTRIBUTION.md).")
    out.append("")
    budget = constraint.get("budget")
    floor = constraint.get("min_multiplier")
    method = (f"Imitation-constrained PPO ({constraint.get('mode', '?')}, tracking budget ε = {cm(budget)}"
              + (f", λ ≥ {floor:g}" if floor else "") + f", a failure charged as {cm(constraint.get('failure_error'))})")
    multiplier = training.get("multiplier")
    stage = "Last stage of a fine-tune chain. " if training.get("initialised_from") else ""
    out.append(f"**Training.** {stage}{method}: {millions(training.get('env_steps'))} env steps on the "
               f"`{training.get('backend', '?')}` backend, {ppo.get('num_envs', '?')} worlds, "
               f"{minutes(training.get('wall_clock_s'))} on {training.get('machine', 'a machine not recorded')}"
               + (f"; λ ended at {multiplier:.2f}" if multiplier is not None else "") + ".")
    out += ["", "```bash", _expert_command(skill, spec, training), "```", ""]
    if training.get("initialised_from"):
        out.append(f"Initialised from {training['initialised_from']}" + (f"; {training['note']}" if training.get("note") else "") + ".")
        out.append("")
    elif training.get("note"):
        out += [training["note"][0].upper() + training["note"][1:] + ".", ""]
    episodes = metrics.get("episodes", 10)
    eval_command = f"metaworld-x eval expert {skill} --seed {metrics.get('seed', 0)}"
    if episodes != 10:
        eval_command += f" --episodes {episodes}"
    out.append(f"**Evaluation** (`{eval_command}`; at shipping, on the training machine):")
    out += ["", "| start | success | tracking error | task return per 1000 steps | falls | episode length |",
            "|---|---|---|---|---|---|"]
    for label, m in _expert_rows(metrics, spec):
        out.append(f"| {label} | {m['success']}/{m['episodes']} | {cm(m.get('tracking_error_m'))} | "
                   f"{_return(m, spec)} | {m.get('falls', '—')} | {num(m.get('episode_length'))} |")
    goals = [f"success ≥ {spec['success_goal']}/10" if spec.get("success_goal") else None,
             f"return ≥ {spec['return_goal']:g} per 1000 steps" if spec.get("return_goal") else None]
    goals = [g for g in goals if g]
    missed = metrics.get("goals_missed") or []
    out += ["", f"Goals ({', '.join(goals + ['tracking within its budget'])}): "
            + ("met." if not missed else "missed: " + "; ".join(missed) + "."), ""]
    out.append("**Limits.**")
    out += [f"- {line}" for line in _expert_limits(skill, metrics, spec)]
    out.append("")
    return "\n".join(out)


EXPERTS_INTRO = """# Shipped experts

One folder per skill, written by `metaworld-x train expert SKILL` (specs in `metaworld_x/experts/specs.py`):
`policy.msgpack` + `policy.json` (load with `metaworld_x.experts.policy.load_policy`, act with `metaworld_x.experts.policy.act`,
no training code needed), `policy.onnx`, `spec.json` (every setting it was trained with), `metrics.json` (its
evaluation at shipping, with the fingerprints of the clips it was measured on: a rebuilt clip fails the tests
until its expert is retrained), `curve.png` and `rollout.gif`. The tests evaluate every expert again and hold it
to these figures. What was learnt on the way is in [`docs/design-notes.md`](../docs/design-notes.md)."""


def _robustness_cell(cell: dict) -> str:
    """"10/10" from the clip, with " · home 9/10" where home starts were measured."""
    clip, home = cell.get("clip"), cell.get("home")
    return ratio(clip) + (f" · home {ratio(home)}" if home else "")


def robustness_section(audit: dict, installed: list[str]) -> str:
    """The table of `python scripts/audit_robustness.py`'s JSON: one row per installed expert it measured, one
    column per suite, and the largest shove each locomotion expert survives in 9 of 10 episodes."""
    suites = list(audit["suites"])
    rows = ["| skill | " + " | ".join(suites) + " | largest shove survived (clip · home) |",
            "|---|" + "---|" * len(suites) + "---|"]
    pushes = audit.get("max_push_m_s") or {}
    for skill in installed:
        if skill not in audit["experts"]:
            rows.append(f"| {skill} | " + " | ".join("not measured" for _ in suites) + " | |")
            continue
        shove = " · ".join(f"{pushes[start][skill]['survives']:.2f} m/s" for start in ("clip", "home")
                           if skill in pushes.get(start, {}))
        rows.append(f"| {skill} | " + " | ".join(_robustness_cell(audit["experts"][skill][s]) for s in suites)
                    + f" | {shove or '—'} |")
    legend = "; ".join(f"`{name}`: {'all of these at once' if name == 'all' else what}"
                       for name, what in audit["suites"].items())
    commands = ", ".join(f"`{c}` ({part})" for part, c in (audit.get("commands") or {}).items())
    return "\n\n".join([
        "## Robustness", f"Success under each perturbation suite ({legend}). Seed {audit['seed']},"
        f" {audit['episodes']} episodes per cell, from the clip and (\"home\") from the home pose; {audit['machine']};"
        f" made by {commands} (`experts/robustness.json`).", "\n".join(rows)])


def experts_readme(experts_dir: Path, motions_dir: Path) -> str:
    folders = artifact_folders(experts_dir)
    rows = ["| skill | success | from the home pose | tracking error | return per 1000 steps | training |",
            "|---|---|---|---|---|---|"]
    for folder in folders:
        m = read_json(folder / "metrics.json")
        home = m.get("from_home") or m.get("from_start") or m.get("from_handover")
        training = m.get("training") or {}
        stage = "last stage: " if training.get("initialised_from") else ""
        rows.append(f"| [{folder.name}](#{folder.name}) | {ratio(m)} | {ratio(home)} | {cm(m.get('tracking_error_m'))} | "
                    f"{_return(m, read_json(folder / 'spec.json'))} | {stage}{millions(training.get('env_steps'))} steps, "
                    f"{minutes(training.get('wall_clock_s'))} |")
    cards = [expert_card(folder, motions_dir) for folder in folders]
    summary = ("Seed 0, 10 episodes, `metaworld-x eval expert SKILL --seed 0`; \"from the home pose\" is from "
               "the clip's first frame for experts whose clip starts there (push, door), and from where another "
               "expert hands over for one that only ever takes over in place (rise, from `sit`'s seat).")
    robustness = experts_dir / "robustness.json"
    audit = [robustness_section(read_json(robustness), [f.name for f in folders])] if robustness.is_file() else []
    return "\n\n".join([GENERATED, EXPERTS_INTRO, "\n".join(rows), summary] + audit + cards).rstrip() + "\n"
