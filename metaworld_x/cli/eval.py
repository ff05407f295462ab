"""`metaworld-x eval expert SKILL` and `metaworld-x eval router`."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Union

import tyro


@dataclass(frozen=True)
class EvalExpert:
    """Evaluate a shipped expert: success over 10 episodes (`--episodes`), keypoint tracking error, task return, falls."""

    skill: tyro.conf.Positional[str]
    """Expert skill (a folder in experts/), or the name of an expert trained on your own motion (--clip)."""
    seed: int = 0
    """Seed of the evaluation episodes."""
    episodes: int = 10
    """Episodes per evaluation. The shipped figures and goals use 10; more tell apart experts that fall a few
    percent of the time, which 10 cannot (goals scale: 9/10 is 18/20)."""
    steps: int | None = None
    """Steps per episode; default the expert's evaluation length (its spec's, else its training episode's). A
    router runs its experts for 1000 steps (20 s): `--steps 1000` asks whether the expert holds up that long."""
    expert_dir: Path | None = None
    """The expert's folder; default experts/<skill>."""
    json_out: Path | None = None
    """Also write the figures to this JSON file."""
    perturb: str = "none"
    """Perturbation suite: none, push, model, latency, noise or all (metaworld_x/envs/perturb.py)."""

    def run(self) -> None:
        from metaworld_x.atomic import check_writable, write_text
        from metaworld_x.envs.perturb import perturb_suite
        from metaworld_x.errors import UserError
        from metaworld_x.experts.specs import installed_spec
        from metaworld_x.experts.training import evaluate_expert, goals_line
        from metaworld_x.paths import EXPERTS_DIR

        if self.episodes < 1:
            raise UserError(f"--episodes must be at least 1, got {self.episodes}")
        directory = self.expert_dir or EXPERTS_DIR / self.skill
        # an unknown skill, or an unwritable --json-out, before the evaluation; an own motion's spec is its spec.json
        spec = installed_spec(self.skill, directory)
        if self.json_out is not None:
            check_writable(self.json_out, "--json-out")
        suite = perturb_suite(self.perturb)
        metrics = evaluate_expert(directory, spec=spec, seed=self.seed,
                                  episodes=self.episodes, steps=self.steps, perturb=self.perturb)
        print(f"perturbation: {self.perturb} ({suite.describe()})")
        print(f"success: {metrics['success']}/{metrics['episodes']}")
        print(f"tracking error: {metrics['tracking_error_m'] * 100:.1f} cm (mean keypoint, relative to the root)")
        print(f"task return: {metrics['task_return']:.1f} ({metrics['task_return_per_1000_steps']:.1f} per 1000 steps)")
        print(f"falls: {metrics['falls']}")
        for key, where, why in (("from_home", "the home pose", "how a router starts the expert"),
                                ("from_handover", "another expert's states", "how a router hands it over"),
                                ("from_start", "the clip's first frame", "the whole task")):
            if (other := metrics.get(key)) is not None:
                print(f"from {where}: success {other['success']}/{other['episodes']}, falls {other['falls']},"
                      f" {other['task_return_per_1000_steps']:.1f} per 1000 steps ({why})")
        print(goals_line(spec, metrics, self.episodes, self.steps))
        if self.json_out is not None:
            write_text(self.json_out, json.dumps(metrics, indent=2))


@dataclass(frozen=True)
class EvalRouter:
    """Evaluate shipped routers: task, success k/10, return, time to success, expert weights over time (PNG),
    and the ablation table (full, no VLM, no world model, no router) recorded when each was trained. The one
    router of all tasks (router/all/, `train router --all`) is evaluated on each of its tasks when it is shipped;
    --per-task evaluates the per-task routers instead. With `--plan mppi`, the executed weights are planned in the
    router's world model instead (weights_mppi.png)."""

    task: str | None = None
    """A task (e.g. stand): one of the one router's tasks, or a per-task router's folder; default every one."""
    per_task: bool = False
    """Evaluate the per-task routers (router/<task>/) even where the one router of all tasks is shipped."""
    instruction: tuple[str, ...] = ()
    """Wordings to evaluate (each must resolve to the router's task); default the trained one."""
    probes: bool = False
    """Also evaluate a never-seen paraphrase and a reordered wording of the task (paraphrase and order robustness)."""
    episodes: int = 10
    """Seeded episodes per wording."""
    steps: int | None = None
    """Steps per episode; default the length the router was evaluated with in training."""
    seed: int = 0
    """Evaluation seed."""
    router_dir: Path | None = None
    """Where the routers are; default router/."""
    experts_dir: Path | None = None
    """Where the experts are installed; default experts/."""
    json_out: Path | None = None
    """Also write the results to this JSON file."""
    plots_dir: Path = Path("runs/eval_router")
    """Where the expert-weight plots go, as PLOTS_DIR/<task>/weights*.png (weights.png for the trained wording,
    weights_<i>.png for the others); `--plots-dir router` rewrites the shipped router/<task>/weights.png."""
    plan: Literal["none", "mppi"] = "none"
    """Execute the router's weights (none), or weights planned by MPPI in the router's shipped world model
    (router/<task>/world_model/) around the router's own, replanned every --plan-every steps in each world (slower)."""
    plan_horizon: int | None = None
    """MPPI: steps planned ahead in the world model; default MppiConfig's (metaworld_x/routing/planner.py)."""
    plan_samples: int | None = None
    """MPPI: weight sequences drawn per iteration; default MppiConfig's."""
    plan_iterations: int | None = None
    """MPPI: refits per plan (0 executes the router's own weights); default MppiConfig's."""
    plan_every: int | None = None
    """MPPI: control steps per plan, the plan's later weights running in between; default MppiConfig's."""
    perturb: str = "none"
    """Perturbation suite: none, push, model, latency, noise or all (metaworld_x/envs/perturb.py)."""

    def planner(self):
        """The MppiConfig asked for, or None without --plan mppi."""
        from metaworld_x.errors import UserError

        knobs = {k: v for k, v in (("horizon", self.plan_horizon), ("samples", self.plan_samples),
                                   ("iterations", self.plan_iterations), ("every", self.plan_every)) if v is not None}
        if self.plan == "none":
            if knobs:
                raise UserError(f"--plan-{next(iter(knobs))} sets the planner: add --plan mppi")
            return None
        from metaworld_x.routing.planner import MppiConfig

        return MppiConfig(**knobs)

    def _runs(self, root: Path) -> list[tuple[Path, str | None]]:
        """What to evaluate: (the one router, each of its tasks) where it is shipped and --per-task is not given,
        else (each per-task router, None); --task picks one."""
        from metaworld_x.errors import UserError
        from metaworld_x.json_file import read_json_object
        from metaworld_x.routing.all_tasks import ALL_TASKS_DIR
        from metaworld_x.routing.evaluation import shipped_routers

        one = Path(root) / ALL_TASKS_DIR
        if not self.per_task and (one / "router.json").is_file():
            record = read_json_object(one / "router.json", "the router's record")
            tasks, skipped = list(record["tasks"]), record.get("skipped_tasks", {})
            if self.task is not None and self.task not in tasks:
                why = f" (it was skipped: it {skipped[self.task]})" if self.task in skipped else ""
                raise UserError(f"the one router in {one} was not trained on {self.task!r}{why}; its tasks:"
                                f" {', '.join(tasks)} (--per-task evaluates the per-task routers)")
            return [(one, t) for t in tasks if self.task in (None, t)]
        folders = shipped_routers(root)
        if self.task is not None:
            folders = [f for f in folders if f.name == self.task]
            if not folders:
                raise UserError(f"no router for task {self.task!r} in {root}; shipped: {', '.join(p.name for p in shipped_routers(root))}")
        return [(f, None) for f in folders]

    def run(self) -> None:
        from metaworld_x.atomic import check_writable, write_text
        from metaworld_x.envs.perturb import perturb_suite
        from metaworld_x.errors import UserError
        from metaworld_x.json_file import read_json_object
        from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
        from metaworld_x.routing.evaluation import PROBES, ablation_table, evaluate_router, results_table

        suite = perturb_suite(self.perturb)
        planner = self.planner()
        if self.episodes < 1:
            raise UserError(f"--episodes must be at least 1, got {self.episodes}")
        if self.steps is not None and self.steps < 1:
            raise UserError(f"--steps must be at least 1, got {self.steps}")
        if self.json_out is not None:
            check_writable(self.json_out, "--json-out")
        root = self.router_dir or ROUTER_DIR
        runs = self._runs(root)  # [(router folder, task or None for its own)]
        for folder, task in runs:
            check_writable(self.plots_dir / (task or folder.name), "--plots-dir", folder=True)
        reports = []
        for folder, task in runs:
            record = read_json_object(folder / "router.json", "the router's record")
            trained = record["tasks"][task]["instruction"] if task is not None else record["instruction"]
            wordings = list(self.instruction) or [trained]
            if self.probes:
                wordings += list(PROBES.get(task or record["task"], ()))
            report = evaluate_router(folder, self.experts_dir or EXPERTS_DIR, wordings, self.episodes, self.seed, self.steps,
                                     plan=planner, plots_dir=self.plots_dir / (task or folder.name), perturb=self.perturb,
                                     task=task)
            metrics_path = folder / "metrics.json"
            metrics = read_json_object(metrics_path, "the router's metrics") if metrics_path.is_file() else {}
            report["metrics"] = metrics if task is None else {}  # the one router's has no per-task ablations
            reports.append(report)
        print(f"perturbation: {self.perturb} ({suite.describe()})")
        print(results_table(reports))
        if planner is not None:
            print(f"weights from {planner.describe()}")
        for report in reports:
            if report["metrics"].get("ablations"):
                print(f"\nablations, {report['task']} (recorded at training, {report['metrics'].get('machine', '')}):")
                print(ablation_table(report["metrics"]))
            planned = "" if planner is None else " (planned by MPPI)"
            print(f"expert weights over time{planned}: {report['rows'][0].get('weights_png', '—')}")
        if self.json_out is not None:
            write_text(self.json_out, json.dumps([{k: v for k, v in r.items() if k != "metrics"} for r in reports], indent=2))


@dataclass(frozen=True)
class EvalScripted:
    """Evaluate the scripted state machine on a sequential instruction (a catalog task, or any chain of the skills):
    each sub-goal's expert alone, switched when the task reports the sub-goal reached. The baseline a router must
    beat. Prints success, return, each sub-goal's success, the expert handovers and the falls after them."""

    instruction: tyro.conf.Positional[str]
    """A sequential instruction, e.g. "walk to the target and touch it with your right hand"."""
    episodes: int = 10
    """Seeded episodes."""
    seed: int = 0
    """Evaluation seed."""
    steps: int | None = None
    """Steps per episode; default the task's episode length."""
    experts_dir: Path | None = None
    """Where the experts are installed; default experts/."""
    json_out: Path | None = None
    """Also write the results to this JSON file."""
    perturb: str = "none"
    """Perturbation suite: none, push, model, latency, noise or all (metaworld_x/envs/perturb.py)."""

    def run(self) -> None:
        from metaworld_x.atomic import check_writable, write_text
        from metaworld_x.envs.perturb import perturb_suite
        from metaworld_x.errors import UserError
        from metaworld_x.paths import EXPERTS_DIR
        from metaworld_x.routing.sequence_report import evaluate_scripted, sequence_lines

        perturb_suite(self.perturb)
        if self.episodes < 1 or (self.steps is not None and self.steps < 1):
            raise UserError(f"--episodes and --steps must be at least 1, got {self.episodes} and {self.steps}")
        if self.json_out is not None:
            check_writable(self.json_out, "--json-out")
        report = evaluate_scripted(self.instruction, self.experts_dir or EXPERTS_DIR, self.episodes, self.seed,
                                   self.steps, self.perturb)
        print(f"{report['task']}: {self.instruction!r} (scene: {', '.join(report['scene'])}), scripted state machine,"
              f" perturbation {self.perturb}")
        print(f"success: {report['success']}/{report['episodes']}")
        print(f"return: {report['return_mean']:.1f} ± {report['return_std']:.1f}")
        for line in sequence_lines(report):
            print(line)
        if self.json_out is not None:
            write_text(self.json_out, json.dumps(report, indent=2))


@dataclass(frozen=True)
class Eval:
    """Evaluate a shipped expert, the shipped routers, or the scripted baseline on a sequential instruction."""

    command: Union[
        Annotated[EvalExpert, tyro.conf.subcommand("expert")],
        Annotated[EvalRouter, tyro.conf.subcommand("router")],
        Annotated[EvalScripted, tyro.conf.subcommand("scripted")],
    ]

    def run(self) -> None:
        self.command.run()
