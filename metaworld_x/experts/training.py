"""Train an expert from its spec, evaluate it, and ship it to a folder (experts/<skill>/ only when asked).

`train_expert` runs imitation-constrained PPO on the spec's Tracking task;
`ship_expert` exports the policy (pure-JAX parameters and ONNX), the spec,
the training curve, a fresh evaluation as metrics.json and a short GIF;
`evaluate_expert` loads a shipped expert without any training code and
measures it over 10 seeded episodes.
"""

import copy
import dataclasses
import functools
import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np

from metaworld_x.atomic import atomic_path, replace_folder
from metaworld_x.experts.environment import expert_task, make_env
from metaworld_x.envs.perturb import as_config
from metaworld_x.envs.tasks.tracking import clip_fingerprints
from metaworld_x.errors import UserError
from metaworld_x.machine import describe_machine
from metaworld_x.experts.specs import OWN_CLIP_FILE, ExpertSpec, installed_spec

EVAL_EPISODES = 10


class TrainerEnv:
    """An environment as the trainer sees it: backend, observation sizes, snapshots."""

    def __init__(self, env, backend: str):
        self.env, self.backend = env, backend
        self.num_envs = env.num_worlds
        self.action_size = env.action_size
        self.action_scale = env.task.config.action_scale  # what one action unit means, for warm starts
        self.episode_length = env.task.config.episode_length  # control steps; a warm start's statistics span one
        probe = env.reset(jax.random.PRNGKey(0))
        self.observation_sizes = {k: tuple(v.shape[1:]) for k, v in probe.obs.items()}

    def reset(self, key):
        return self.env.reset(key)

    def step(self, state, action):
        return self.env.step(state, action)

    def snapshot(self, state):
        return self.env.snapshot(state) if hasattr(self.env, "snapshot") else state

    def restore(self, snapshot):
        return self.env.restore(snapshot) if hasattr(self.env, "restore") else snapshot


def train_expert(spec: ExpertSpec, run_dir: Path, resume: bool = False, seed: int | None = None, progress: bool = True,
                 init_from: Path | None = None, stop_at: float | None = None, started_at: float | None = None,
                 overwrite: bool = False):
    """Train `spec`'s expert; checkpoints, metrics and curve go to run_dir. `init_from`, `stop_at`,
    `started_at`, `overwrite`: see `RunOptions`."""
    from metaworld_x.training.config import RunOptions
    from metaworld_x.training.train import make_train

    task = expert_task(spec)
    config = spec.ppo if seed is None else _with_seed(spec.ppo, seed)
    make = lambda n: TrainerEnv(make_env(task, n, config.backend), config.backend)  # noqa: E731
    meta = {"expert": spec.record(), "initialised_from": lineage(run_dir, resume, init_from)}
    options = RunOptions(run_dir=run_dir, resume=resume, init_from=init_from, overwrite=overwrite, stop_at=stop_at,
                         started_at=started_at, progress=progress, extra_meta=meta)
    train = make_train(config, make, options)
    return train(jax.random.PRNGKey(config.seed))


def lineage(run_dir: Path, resume: bool, init_from: Path | None) -> str | None:
    """Where a run's weights began: `init_from`, or, resumed, what its newest checkpoint recorded. A fine-tune
    resumed twice shipped as trained from scratch before this was read back."""
    if init_from is not None:
        return str(init_from)
    if resume:
        from metaworld_x.training import checkpoint

        newest = checkpoint.latest(Path(run_dir) / "checkpoints")
        if newest is not None:
            return checkpoint.read_meta(newest).get("initialised_from")
    return None


def _with_seed(config, seed):
    return replace(config, seed=seed)


def _with_tracking(task, **fields):
    """`task` with `TrackingConfig` fields overridden: its episode starts (home_start_fraction) or length."""
    return replace(task, config=replace(task.config, **fields))


# Episodes from the home pose with the clip re-anchored onto the robot at every step, as a router runs an expert,
# whichever anchoring the expert trained with (`TrackingConfig.home_anchor`).
AS_A_ROUTER_STARTS = {"home_start_fraction": 1.0, "handover_start_fraction": 0.0, "home_anchor": "every_step"}


def ship_expert(spec: ExpertSpec, result, out_dir: Path, video: bool = True,
                initialised_from: Path | None = None) -> Path:
    """Write the trained expert to `out_dir`, replacing an older one atomically. It has no default: replacing a
    shipped expert (experts/<skill>) is something a caller asks for.

    `initialised_from`: the run a fine-tune started from, recorded in metrics.json so the expert's lineage is known."""
    from metaworld_x.experts.policy import export_onnx, from_training, save_policy

    final = Path(out_dir)
    staging = final.with_name(f".{final.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    task = expert_task(spec)
    policy = from_training(result.state.params.policy, result.state.normalizer)
    save_policy(policy, staging, {
        "skill": spec.skill, "description": spec.description, "variant": task.variant, "scene": task.scene,
        "observation": "proprioception + tracking features (see metaworld_x.envs.tasks.tracking)",
    })
    export_onnx(policy, staging / "policy.onnx")
    record = spec.record()
    if spec.clip_settings:  # a user's clip travels with its expert, which nothing in the package names
        shutil.copy(spec.clips[0], staging / OWN_CLIP_FILE)
        record["clips"] = [str((final / OWN_CLIP_FILE).resolve())]
    (staging / "spec.json").write_text(json.dumps(record, indent=2, default=str))
    if result.run_dir is not None and (result.run_dir / "curve.png").is_file():
        shutil.copy(result.run_dir / "curve.png", staging / "curve.png")
    metrics = evaluate_expert(staging, spec=spec)
    metrics["goals_missed"] = spec.shortfalls(metrics)
    metrics["training"] = {
        "env_steps": int(result.state.env_steps),
        "backend": spec.ppo.backend,
        "wall_clock_s": result.history[-1].get("perf/wall_clock_s") if result.history else None,
        "initialised_from": str(initialised_from) if initialised_from else None,
        "machine": describe_machine(),
        # where the Lagrange multiplier ended, so that a fine-tune from this folder starts it there (warm_start)
        "multiplier": float(result.state.multiplier),
    }
    (staging / "metrics.json").write_text(json.dumps(metrics, indent=2))
    if video:
        record_gif(staging, spec, staging / "rollout.gif")
    return replace_folder(staging, final)


def _props_translucent(model, alpha: float = 0.25):
    """A copy of `model` whose props (bodies outside the robot, not the floor) are drawn see-through, so that a
    wall or roof (the crawl's tunnel) cannot hide the robot, which is what an expert's GIF is about."""
    from metaworld_x.robot.parts import prop_geoms

    model = copy.deepcopy(model)
    props = prop_geoms(model)
    model.geom_rgba[props, 3] = np.minimum(model.geom_rgba[props, 3], alpha)
    return model


def load_expert(directory: Path):
    """(PolicyParams, policy spec) of a shipped expert, with a hint when it is missing."""
    from metaworld_x.experts.policy import load_policy

    directory = Path(directory)
    if not (directory / "policy.json").is_file():
        raise UserError(
            f"no trained expert in {directory}; train it with `metaworld-x train expert {directory.name}`"
        )
    return load_policy(directory)


def evaluation_length(spec: ExpertSpec) -> int:
    """Steps per episode of an evaluation with no --steps, the length its goals are defined on: the spec's
    `eval_episode_length`, else its training episode's."""
    return spec.eval_episode_length or expert_task(spec).config.episode_length


def goals_line(spec: ExpertSpec, metrics: dict, episodes: int, steps: int | None) -> str:
    """`eval expert`'s verdict on the spec's goals: met, missed (which), or not checked where the run was shorter
    than the goals are defined on (EVAL_EPISODES episodes of `evaluation_length` steps; more scale the bar)."""
    length = evaluation_length(spec)
    if episodes < EVAL_EPISODES or (steps is not None and steps < length):
        return (f"goals: not checked (shortened run): they are defined on {EVAL_EPISODES} episodes of {length} steps,"
                f" this ran {episodes} of {length if steps is None else steps}")
    missed = spec.shortfalls(metrics)
    return "goals: met" if not missed else f"goals: missed ({'; '.join(missed)})"


def _check_skill(directory: Path, spec: ExpertSpec, policy_spec: dict) -> None:
    """Refuse a folder whose policy.json or spec.json names another skill than the one evaluated: its figures would
    be judged against the wrong goals."""
    from metaworld_x.json_file import read_json_object

    named = {"policy.json": policy_spec.get("skill")}
    if (directory / "spec.json").is_file():
        named["spec.json"] = read_json_object(directory / "spec.json", "the expert's spec").get("skill")
    for file, skill in named.items():
        if skill != spec.skill:
            raise UserError(f"{directory} holds the {skill!r} expert ({file}), not {spec.skill!r}; evaluate it as"
                            f" `metaworld-x eval expert {skill} --expert-dir {directory}`")


def evaluate_expert(directory: Path, spec: ExpertSpec | None = None, seed: int = 0, episodes: int = EVAL_EPISODES,
                    steps: int | None = None, perturb=None, other_starts: bool = True) -> dict:
    """Success over `episodes` seeded episodes started on the clip, keypoint error, task return and falls; and the
    same from the scene's home pose under "from_home", the clip re-anchored onto the robot at every step as a
    router runs the expert (`AS_A_ROUTER_STARTS`), whatever anchoring it trained with (and from `handover_clip`'s
    states under "from_handover", for an expert trained to take over from another), or, where the expert's task
    cannot start there (its props come from the clip), from the clip's first frame under "from_start". An expert
    that only ever takes over in place (rise, from sit's seat) has no home figure: `from_home` is None.

    Most episodes on the clip start at a random time, and a late start in a prop task begins with part of the
    task done (past the door, the box near the marker): "from_start" is the whole task, as a router meets it.
    `steps`: episode length; default the spec's `eval_episode_length`, else its training one. A router runs its
    experts for 1000 steps, often longer than they trained; the success bar scales with the length.
    `perturb`: a suite name or PerturbConfig (`metaworld_x.envs.perturb`) every evaluation runs under; default none.
    `other_starts=False` measures the clip starts only.
    """
    directory = Path(directory)
    params, policy_spec = load_expert(directory)
    spec = spec or installed_spec(policy_spec.get("skill", directory.name), directory)
    _check_skill(directory, spec, policy_spec)
    task = expert_task(spec)
    steps = spec.eval_episode_length if steps is None else steps
    if steps is not None:
        if steps < 1:
            raise UserError(f"episode length must be at least 1 step, got {steps}")
        task = _with_tracking(task, episode_length=steps)
    run = functools.partial(_evaluate, perturb=perturb)
    metrics = run(params, spec, task, seed, episodes, home_start_fraction=0.0, handover_start_fraction=0.0)
    if perturb is not None and not as_config(perturb).nominal:
        metrics["perturb"] = {"suite": perturb if isinstance(perturb, str) else "custom",
                              "config": dataclasses.asdict(as_config(perturb))}
    if not other_starts:
        return metrics
    if task.config.handover_in_place:  # it starts where another expert leaves the robot (rise: seated), never at home
        metrics["from_home"] = None
    elif task.config.home_starts_possible:
        metrics["from_home"] = run(params, spec, task, seed, episodes, **AS_A_ROUTER_STARTS)
    if task.config.handover_start_fraction > 0:
        metrics["from_handover"] = run(params, spec, task, seed, episodes, home_start_fraction=0.0,
                                       handover_start_fraction=1.0)
    if not task.config.home_starts_possible:
        metrics["from_home"] = None
        metrics["from_start"] = run(params, spec, task, seed, episodes, home_start_fraction=0.0,
                                    phase_zero_fraction=1.0)
    metrics["clips"] = clip_fingerprints(task.config)  # the figures hold for these versions of the clips only
    return metrics


def _evaluate(params, spec: ExpertSpec, task, seed: int, episodes: int, perturb=None, **starts: float) -> dict:
    """One evaluation of `task` with its episode starts overridden (`TrackingConfig` fields): home_start_fraction 0
    (on the clip) or 1 (from the home pose); phase_zero_fraction 1 puts every clip start at the first frame.
    `perturb`: see `evaluate_expert`."""
    from metaworld_x.envs.perturb import perturbed
    from metaworld_x.experts.policy import act

    task = _with_tracking(task, **starts)
    env = perturbed(make_env(task, episodes, "cpu"), perturb)
    reasons = env.reason_names
    policy = jax.jit(lambda obs: act(params, obs))
    state = env.reset(jax.random.PRNGKey(seed))
    reads, given = int(params.obs_mean.shape[0]), int(state.obs["state"].shape[-1])
    if reads != given:
        raise UserError(f"expert {spec.skill!r} reads {reads} observation entries but its task now gives {given};"
                        f" its recipe changed after it was trained: retrain it with `metaworld-x train expert {spec.skill}`")
    alive = np.ones(episodes, bool)
    success, fell = np.zeros(episodes, bool), np.zeros(episodes, bool)
    task_return, error_sum, length = np.zeros(episodes), np.zeros(episodes), np.zeros(episodes)
    started = time.perf_counter()
    for step in range(task.config.episode_length):
        action = policy(state.obs["state"])
        # figures of a robot driven by NaN would describe no policy at all (a NaN expert scored 0.0 cm, no falls)
        if (nonfinite := alive & ~np.isfinite(np.asarray(action)).all(axis=-1)).any():
            raise UserError(f"expert {spec.skill!r} gave non-finite actions (NaN or inf) at step {step} in"
                            f" {int(nonfinite.sum())} of {episodes} episodes; nothing can be measured: retrain it or"
                            " restore its folder")
        state = env.step(state, action)
        done = np.asarray(state.done)
        task_return += np.asarray(state.metrics["task/reward"]) * alive
        error_sum += np.asarray(state.metrics["imitation/tracking_error"]) * alive
        length += alive
        success |= alive & (np.asarray(state.metrics["success"]) > 0.5)
        reason = np.asarray(state.info["termination_reason"])
        fell |= alive & done & np.isin(reason, [reasons.index(r) for r in ("fall", "deviation") if r in reasons])
        alive &= ~done
        if not alive.any():
            break
    return {
        "skill": spec.skill,
        "episodes": episodes,
        "seed": seed,
        "success": int(success.sum()),
        "success_rate": float(success.mean()),
        "tracking_error_m": float((error_sum / np.maximum(length, 1)).mean()),
        "task_return": float(task_return.mean()),
        "task_return_per_1000_steps": float((task_return / np.maximum(length, 1)).mean() * 1000),
        "falls": int(fell.sum()),
        "episode_length": float(length.mean()),
        "eval_seconds": time.perf_counter() - started,
    }


# An expert's GIF lasts this many control steps (3 s), or, filmed from home, its whole task up to HOME_GIF_STEPS
# (8 s): a fetch's carry lifts the box only after 3.6 s.
GIF_STEPS = 150
HOME_GIF_STEPS = 400


def record_gif(directory: Path, spec: ExpertSpec, path: Path, steps: int | None = None, fps: int = 25) -> Path:
    """A short GIF of the expert in one world, rendered headless. An expert trained with home starts is filmed
    from the home pose, as a router runs it: a random clip start can end by the deviation limit within the GIF
    and cut to a reset."""
    import imageio.v3 as iio
    import mujoco

    from metaworld_x.experts.policy import act
    from metaworld_x.render import render_frame

    params, _ = load_expert(directory)
    task = expert_task(spec)
    if task.config.home_start_fraction > 0:
        task = _with_tracking(task, **AS_A_ROUTER_STARTS)
        steps = steps or min(task.config.episode_length, HOME_GIF_STEPS)
    steps = steps or GIF_STEPS
    env = make_env(task, 1, "cpu")
    state = env.reset(jax.random.PRNGKey(0))
    policy = jax.jit(lambda obs: act(params, obs))
    model = _props_translucent(env.compiled.model)
    renderer = mujoco.Renderer(model, 240, 320)
    data = mujoco.MjData(model)
    frames = []
    every = max(1, round(1 / (fps * env.compiled.control_dt)))
    for i in range(steps):
        state = env.step(state, policy(state.obs["state"]))
        if i % every == 0:
            env.batch.get_data(0, data)
            mujoco.mj_forward(model, data)
            frames.append(render_frame(model, data, renderer=renderer))
    with atomic_path(path) as tmp:
        iio.imwrite(tmp, np.stack(frames), extension=".gif", duration=1000 / fps, loop=0)
    return path
