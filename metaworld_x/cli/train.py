"""`metaworld-x train expert SKILL` and `metaworld-x train router`."""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Union

import tyro

from metaworld_x.cli.overrides import overrides_of

# `train expert`'s PPO options: each spec has its own PPO settings (metaworld_x/experts/specs.py), which these replace.
PPO_OVERRIDES = overrides_of(
    "PPOOverrides", {"": ("metaworld_x.training.config", "PPOConfig")},
    ("total_env_steps", "num_envs", "num_minibatches", "unroll_length", "eval_every", "learning_rate", "desired_kl",
     "backend", "seed"), hint="(default: the spec's)")
# `train router`'s budget: one task's router (RouterTrainConfig), or with --all the one router (AllTasksConfig).
ROUTER_BUDGET = overrides_of(
    "RouterBudget", {"": ("metaworld_x.routing.pipeline", "RouterTrainConfig"),
                     "--all": ("metaworld_x.routing.all_tasks", "AllTasksConfig")},
    ("num_worlds", "collect_steps", "wm_steps", "prior_fit_updates", "imagination_updates", "finetune_rounds",
     "finetune_steps", "finetune_wm_steps", "finetune_updates", "eval_episodes", "eval_steps"))


@dataclass(frozen=True)
class TrainExpert:
    """Train an expert with imitation-constrained PPO (spec in metaworld_x/experts/specs.py, or derived from --clip)
    and ship it to <run-dir>/expert (`--out experts/SKILL` replaces the shipped one)."""

    skill: tyro.conf.Positional[str]
    """Expert skill: stand, walk, run, sit, rise, turn, stop, crawl, reach_one_hand, reach_two_hands, carry, push, door;
    with --clip, the name of your own motion's expert (e.g. two_footed_hop)."""
    clip: Path | None = None
    """Train on your own motion: a retargeted clip (.npz, as in assets/motions), or a .bvh or DeepMimic .txt that is
    retargeted first. The spec is derived from the clip (docs/own-motion.md) and shipped in the expert's spec.json."""
    describe: str | None = None
    """With --clip: the expert's one-line description, which the router's language prior reads (e.g. "a two-footed
    hop"); default the name's words."""
    ppo: Annotated[PPO_OVERRIDES, tyro.conf.OmitArgPrefixes] = PPO_OVERRIDES()
    """PPO settings that override the spec's (PPOConfig)."""
    run_dir: Path | None = None
    """Checkpoints, metrics, TensorBoard and curve; default runs/<skill>."""
    resume: bool = False
    """Continue from the newest checkpoint in run_dir that verifies."""
    overwrite: bool = False
    """Start afresh in a run_dir that holds an earlier run's checkpoints, deleting them (refused without it)."""
    init_from: Path | None = None
    """Start from this run directory's newest checkpoint (or this checkpoint): its networks, optimiser, normaliser,
    multiplier and step count, with fresh environments. For fine-tuning under changed task settings (home starts).
    Or a shipped expert's folder (experts/SKILL): its policy and input statistics, with fresh critics that train
    alone for 30 iterations and λ where its training left it (if recorded), when the run folder is gone."""
    max_minutes: float | None = None
    """Stop training after this many minutes from the command's start (imports and compilation included), with a
    checkpoint, then ship what was trained; `--resume` continues the run later."""
    out: Path | None = None
    """Where to ship the trained expert; default <run-dir>/expert. `--out experts/<skill>` replaces the shipped one."""
    ship: bool = True
    """Export, evaluate and ship the expert when training ends."""
    video: bool = True
    """Render the shipped expert's GIF (needs an OpenGL context: a display, or EGL/OSMesa headless)."""
    distributed: bool = False
    """Join a multi-process run (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; README, Multi-process
    training): each process simulates its share of num_envs, and process 0 alone writes the run and ships."""
    heartbeat_timeout: int = 30
    """With --distributed: seconds after which a process that stopped answering counts as dead and the others stop."""

    def run(self) -> None:
        started = time.perf_counter()
        stop_at = started + 60 * self.max_minutes if self.max_minutes is not None else None
        if self.heartbeat_timeout < 1:
            from metaworld_x.errors import UserError

            raise UserError(f"--heartbeat-timeout must be at least 1 second, got {self.heartbeat_timeout}")
        # the options are checked before joining a multi-process run, so that each process refuses them on its own
        spec, run_dir, out = self._plan()
        if self.distributed:
            from metaworld_x.training.devices import initialize_distributed

            initialize_distributed(self.heartbeat_timeout)
        from metaworld_x.experts.training import lineage, train_expert
        from metaworld_x.training.devices import fail_fast_across_processes, is_main_process, leave_distributed

        initialised_from = lineage(run_dir, self.resume, self.init_from)  # before training writes new checkpoints

        with fail_fast_across_processes():
            result = train_expert(spec, run_dir, resume=self.resume, init_from=self.init_from, stop_at=stop_at,
                                  started_at=started, overwrite=self.overwrite)
            leave_distributed()
        if not is_main_process():
            print(f"trained {self.skill}: {int(result.state.env_steps)} environment steps; process 0 writes the run")
            return
        print(f"trained {self.skill}: {int(result.state.env_steps)} environment steps; run in {run_dir}")
        if result.rollbacks:
            print(f"{len(result.rollbacks)} non-finite update(s) rolled back; see {run_dir}")
        if self.ship:
            from metaworld_x.experts.training import ship_expert

            path = ship_expert(spec, result, out, video=self.video, initialised_from=initialised_from)
            if self.clip is not None:
                print(f"shipped to {path}" + ("" if self.out else f" (install it with --out experts/{self.skill})"))
            else:
                print(f"shipped to {path}" + ("" if self.out else f" (the installed expert is unchanged; --out"
                                                                    f" experts/{self.skill} replaces it)"))

    def _plan(self):
        """(spec, run folder, where to ship) of the run the options describe, refused before any work where wrong."""
        overrides = self.ppo.given()
        run_dir = self.run_dir or Path("runs") / self.skill
        out = self.out or run_dir / "expert"
        if self.clip is not None:
            spec = self._own_motion_spec(run_dir, out, overrides)
        else:
            from metaworld_x.experts.specs import expert_spec

            if self.describe is not None:
                from metaworld_x.errors import UserError

                raise UserError("--describe describes an expert of your own motion; add --clip FILE, or drop it")
            spec = expert_spec(self.skill, **overrides)
            self._check(run_dir, out)
        # what is trained, stated up front: a spec edited in another checkout than the one imported shows here
        print(f"training {spec.skill}: clips {', '.join(spec.clips)}, objective {spec.objective},"
              f" tracking {spec.tracking or 'defaults'}, {spec.ppo.total_env_steps:,} steps on {spec.ppo.backend}")
        return spec, run_dir, out

    def _own_motion_spec(self, run_dir: Path, out: Path, overrides: dict):
        """The generic spec of --clip's motion, its settings derived from the clip and printed; the clip (retargeted
        first where it is mocap) is saved in the run folder, which the spec reads it from."""
        from metaworld_x.errors import UserError
        from metaworld_x.motion.clip import save_clip
        from metaworld_x.experts.own_motion import (
            check_name, check_trainable, clip_from_file, default_description, derive_settings, own_motion_spec,
            settings_lines,
        )

        check_name(self.skill)
        if self.describe is not None and not self.describe.strip():
            raise UserError('--describe is empty; say what the motion is in one line, e.g. --describe "a two-footed hop"')
        if not self.clip.is_file():
            raise UserError(f"--clip {self.clip}: no such motion file; give a retargeted clip (.npz), a .bvh or a"
                            " DeepMimic .txt")
        self._check(run_dir, out)
        clip = clip_from_file(self.clip, self.skill, progress=True)
        check_trainable(clip, self.clip)
        settings = derive_settings(clip)
        saved = save_clip(clip, run_dir / "clip.npz")
        description = " ".join((self.describe or default_description(self.skill)).split())
        print(f"{self.skill}: {clip.num_frames} frames ({clip.duration:.2f} s) from {self.clip}; settings derived from"
              " the clip:")
        print("\n".join(settings_lines(settings)))
        return own_motion_spec(self.skill, saved, description, settings, source=str(self.clip), **overrides)

    def _check(self, run_dir: Path, out: Path) -> None:
        """Refuse, before training, numbers the spec does not check and folders the run could not write."""
        from metaworld_x.atomic import check_writable
        from metaworld_x.errors import UserError

        if self.ppo.eval_every is not None and self.ppo.eval_every < 0:
            raise UserError(f"--eval-every must be 0 (off) or more iterations, got {self.ppo.eval_every}")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise UserError(f"--max-minutes must be positive, got {self.max_minutes}")
        check_writable(run_dir, "--run-dir", folder=True)
        if self.ship:
            check_writable(out, "--out", folder=True)


@dataclass(frozen=True)
class TrainRouter:
    """Train the world model and the router for one task on the installed experts, and ship it to router/<task>/;
    with --all, one router for every catalog task, shipped to router/all/.

    Collects expert rollouts in the task's scene (cpu backend), trains the world model, reports its
    k-step error on held-out rollouts, trains the router in imagination under the decaying VLM-prior KL,
    fine-tunes on the router's own rollouts, evaluates, and ships. Defaults take about 20 minutes on 2 cores
    for one task, under an hour for all of them (--all).
    """

    task: str | None = None
    """An instruction in plain English, or a catalog task: fetch, push, door, sit, stand, run, crawl, reach;
    default "stand still"."""
    all: bool = False
    """Train one router for all catalog tasks (or --tasks), conditioned on each instruction's embedding, in one
    world model (metaworld_x/routing/all_tasks.py)."""
    tasks: tuple[str, ...] = ()
    """With --all: the catalog tasks to train on; default all of them."""
    experts_dir: Path | None = None
    """Where the experts are installed; default experts/."""
    out: Path | None = None
    """Where to ship; default router/ (the router goes to <out>/<task>/, or <out>/all/ with --all)."""
    run_dir: Path = Path("runs/router")
    """Buffers, world models and router stages (per task, or all/), for --resume."""
    resume: bool = False
    """Continue a killed run from its last finished stage."""
    ablations: bool = False
    """Also train the no-VLM and no-world-model variants and evaluate the no-router one (about 2x the time); with
    --all, the scripted baseline on every task and, for fetch, door and push, a router without their own expert."""
    leave_one_out: tuple[str, ...] | None = None
    """With --all --ablations: task:expert pairs, each a router trained on the task alone without that expert;
    default fetch:carry door:door push:push."""
    budget: Annotated[ROUTER_BUDGET, tyro.conf.OmitArgPrefixes] = ROUTER_BUDGET()
    """How much is collected, trained and evaluated (RouterTrainConfig; with --all, AllTasksConfig)."""
    seed: int = 0
    """Seed of collection, training and evaluation."""
    fast_compile: bool = False
    """Compile without XLA optimisation (faster start, slower steps): for smoke runs."""
    vlm: str | None = None
    """Score the prior with this transformers image-text-to-text model (a local folder, or a hub id you have
    downloaded) on a render of the scene's start; default: the packaged text encoder, which sees no image."""
    vlm_cache: Path | None = None
    """Where the prior's labels are cached, so that training the same task again does not run the model again;
    default $METAWORLD_X_CACHE/vlm, else ~/.cache/metaworld_x/vlm."""
    vlm_trust_remote_code: bool = False
    """Let transformers run the code that --vlm's model ships with (only for a model you trust)."""

    def config(self):
        from dataclasses import replace

        from metaworld_x.errors import UserError
        from metaworld_x.routing.all_tasks import AllTasksConfig
        from metaworld_x.routing.pipeline import RouterTrainConfig

        base = AllTasksConfig() if self.all else RouterTrainConfig()
        if self.all:
            if self.task is not None:
                raise UserError("--all trains one router on every catalog task (choose some with --tasks);"
                                " --task is for one task's router")
            extra = {"tasks": self.tasks} if self.tasks else {}
            if self.leave_one_out is not None:
                extra["leave_one_out"] = self.leave_one_out
        else:
            if self.tasks or self.budget.prior_fit_updates is not None or self.leave_one_out is not None:
                raise UserError("--tasks, --prior-fit-updates and --leave-one-out apply to the one router of --all; add --all")
            extra = {"task": self.task or base.task, "ablations": self.ablations}
        return replace(
            base, **extra, **self.budget.given(), seed=self.seed,
            world_model=replace(base.world_model, fast_compile=self.fast_compile, seed=self.seed),
            router=replace(base.router, fast_compile=self.fast_compile, seed=self.seed, vlm=self.vlm,
                           vlm_trust_remote_code=self.vlm_trust_remote_code),
        )

    def run(self) -> None:
        import json

        from metaworld_x.atomic import check_writable
        from metaworld_x.errors import UserError
        from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
        from metaworld_x.routing.evaluation import ablation_table
        from metaworld_x.routing.pipeline import run_pipeline

        for name in ("finetune_steps", "eval_steps"):  # the ones the configs leave to the pipeline
            if (value := getattr(self.budget, name)) is not None and value < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        config = self.config()
        check_writable(self.run_dir, "--run-dir", folder=True)
        check_writable(self.out or ROUTER_DIR, "--out", folder=True)
        if self.all:
            from metaworld_x.routing.all_tasks import run_all_tasks

            out = run_all_tasks(config, self.experts_dir or EXPERTS_DIR, self.run_dir, self.out or ROUTER_DIR,
                                self.resume, vlm_cache=self.vlm_cache, ablations=self.ablations)
            metrics = json.loads((out / "metrics.json").read_text())
            final = metrics["selected_evaluation"]
            print(f"shipped to {out} (round {final['round']}): {final['success']}/{final['episodes']} successes over"
                  f" {len(final['tasks'])} tasks; training {metrics['seconds']['training_total'] / 60:.1f} min,"
                  f" wall clock {metrics['wall_clock_s'] / 60:.1f} min")
            for task, row in final["tasks"].items():
                print(f"  {task:<10} {row['success']}/{row['episodes']}  return {row['return_mean']:.1f}")
            for task, why in metrics["skipped_tasks"].items():
                print(f"  {task:<10} skipped: it {why}")
            if metrics["ablations"]:
                from metaworld_x.routing.one_router_ablations import comparison_table

                print("\nbeside its ablations (success, return; same seeds):\n" + "\n".join(comparison_table(metrics)))
            return
        out = run_pipeline(config, self.experts_dir or EXPERTS_DIR, self.run_dir, self.out or ROUTER_DIR, self.resume,
                           vlm_cache=self.vlm_cache)
        metrics = json.loads((out / "metrics.json").read_text())
        final = metrics["selected"]
        print(f"shipped to {out} (round {final['round']}): {final['success']}/{final['episodes']} successes, return {final['return_mean']:.1f};"
              f" training {metrics['seconds']['training_total'] / 60:.1f} min, wall clock {metrics['wall_clock_s'] / 60:.1f} min")
        if len(metrics["ablations"]) > 1:
            print(ablation_table(metrics))


@dataclass(frozen=True)
class Train:
    """Train an expert, or the router on the installed experts."""

    command: Union[
        Annotated[TrainExpert, tyro.conf.subcommand("expert")],
        Annotated[TrainRouter, tyro.conf.subcommand("router")],
    ]

    def run(self) -> None:
        self.command.run()
