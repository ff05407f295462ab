"""`metaworld-x train router --all`: one router for every catalog task, trained in one world model.

The one router reads, in every task's scene, the same layout:

    state  = proprioception [49] + zeros + the task's features, right-aligned in `task_features` columns
    text   = the instruction's embedding [384]
    output = weights over every installed expert (a fixed, recorded set)

The text says which task a feature column belongs to. Stages (each written
atomically to the run folder; a killed run resumes at the first stage it had
not finished):

1. collect: in every task's scene, rollouts driven by one expert alone or by
   Dirichlet(1) mixtures, into one buffer that records each episode's task;
   a held-out buffer from other seeds;
2. world model: one, on the union;
3. prior fit: the router regresses KL(prior ‖ router) on real states, each
   with a task's text and prior (a sequence's: its phase's, on its own
   states; the others' on any task's states), so the router it starts from
   follows the language prior of every task;
4. imagination: actor-critic in the world model, each sample with its own
   text and prior, the KL weight decaying per update;
5. fine-tune rounds: the router's own rollouts in every task's scene join the
   buffer, the world model trains on, imagination continues;
6. ship: router/all/ (params, expert-set record, every task's instruction,
   text embedding and prior, world model, metrics.json), replaced by one rename.

A task whose experts are not installed (a sequence whose sub-goal needs one)
is skipped, with one printed line, and named in metrics.json.
"""

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from metaworld_x.atomic import atomic_path, replace_folder
from metaworld_x.errors import UserError
from metaworld_x.machine import describe_machine
from metaworld_x.routing.config import RouterConfig
from metaworld_x.routing.pipeline import WM_DIR, _default_world_model, _read_json, write_json
from metaworld_x.world_model.config import WorldModelConfig

ALL_TASKS_DIR = "all"
"""The one router's folder under router/."""


def _default_router() -> RouterConfig:
    # The sequences' phase labels are what tells their phases apart, so the prior decays at their pace.
    return RouterConfig(imagination_horizon=5, entropy_coef=0.01, vlm_decay=0.999)


def _catalog_names() -> tuple[str, ...]:
    from metaworld_x.routing.language import TASK_NAMES

    return TASK_NAMES


@dataclass(frozen=True)
class AllTasksConfig:
    """Everything `train router --all` decides. The defaults fit all catalog tasks in under an hour on a 2-core CPU."""

    tasks: tuple[str, ...] = field(default_factory=_catalog_names)
    """Catalog tasks to train on (default all of them); a task whose experts are missing is skipped."""
    task_features: int = 32
    """Columns the task's features are padded to in the router's observation (fetch, the widest, has 26)."""
    num_worlds: int = 10
    """Parallel simulations per task while collecting; as many as eval_episodes, so that each scene compiles once."""
    collect_steps: int = 300
    """Control steps per world and task of the expert rollouts."""
    mixed_fraction: float = 0.5
    """Share of collection worlds driven by random mixtures instead of one expert."""
    led_fraction: float = 0.3
    """Share of collection worlds (the first ones) that run the top expert of their state's label alone
    (`rollouts.label_led`). Without them no world reached a sequence's later phases where its first skill takes
    longer than a collection segment: the router fitted to the labels had never seen rise_walk standing, nor
    door_sit through the door, and kept rise and door to the end (0/10 each)."""
    segment: int = 50
    """Control steps a random mixture is held."""
    heldout_steps: int = 40
    """Control steps per held-out world and task; at least 20 for the 20-step error."""
    wm_steps: int = 4000
    """World-model gradient steps on the expert data."""
    prior_fit_updates: int = 1500
    """Supervised updates that fit the router to every task's prior before imagination."""
    prior_fit_learning_rate: float = 1e-3
    """Adam step size of the prior fit."""
    imagination_updates: int = 600
    """Router updates in imagination before the first fine-tune round."""
    finetune_rounds: int = 1
    """Rounds of real router rollouts (every task), world-model updates and more imagination."""
    finetune_steps: int = 100
    """Control steps per world and task per fine-tune round."""
    finetune_explore: float = 0.2
    """Weight of a Dirichlet(1) draw mixed into the router's weights while fine-tuning (exploration)."""
    finetune_wm_steps: int = 1000
    """World-model gradient steps per fine-tune round."""
    finetune_updates: int = 300
    """Imagination updates per fine-tune round."""
    batch_size: int = 256
    """Start states per router update, shared equally among the tasks (a sequence's share among its phases)."""
    eval_episodes: int = 10
    """Seeded evaluation episodes per task (one world each)."""
    eval_steps: int | None = None
    """Steps per evaluation episode; default each task's episode length."""
    eval_every_round: bool = False
    """Evaluate (every task) after each round; default only the starting router and the last round's."""
    seed: int = 0
    """Seed of collection, training and evaluation."""
    all_wordings: bool = False
    """Router updates give each sample one of its task's catalog wordings (the instruction or a paraphrase), drawn at
    random; otherwise the instruction alone. Measured with the packaged text encoder (seed 0): it left a never-seen
    wording of walk_push at 0/10 ("head to the table and shove the crate onto the red marker": walk and push
    blended from the start, where the instruction alone blended carry and push), with 100/130 over the tasks
    either way, so it is off."""
    leave_one_out: tuple[str, ...] = ("fetch:carry", "door:door", "push:push")
    """With ablations: "task:expert" pairs, each a router trained on the task alone without that expert."""
    world_model: WorldModelConfig = field(default_factory=_default_world_model)
    """The world model."""
    router: RouterConfig = field(default_factory=_default_router)
    """The router and its imagination training."""

    def __post_init__(self):
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "leave_one_out", tuple(self.leave_one_out))
        from metaworld_x.routing.language import TASK_NAMES

        for pair in self.leave_one_out:
            task, _, expert = pair.partition(":")
            if not expert or task not in TASK_NAMES:
                raise UserError(f"leave_one_out takes task:expert pairs of a catalog task and an expert (e.g. door:door),"
                                f" got {pair!r}")
        unknown = [t for t in self.tasks if t not in TASK_NAMES]
        if unknown or not self.tasks:
            raise UserError(f"unknown task(s) {', '.join(unknown) or '(none given)'}; tasks: {', '.join(TASK_NAMES)}")
        for name in ("num_worlds", "collect_steps", "batch_size", "eval_episodes", "task_features"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.heldout_steps < 20:
            raise UserError(f"heldout_steps must be at least 20 for the 20-step error, got {self.heldout_steps}")
        if not all(0 <= f <= 1 for f in (self.mixed_fraction, self.led_fraction, self.finetune_explore)):
            raise UserError("mixed_fraction, led_fraction and finetune_explore must be in [0, 1]")
        counts = (self.wm_steps, self.prior_fit_updates, self.imagination_updates, self.finetune_rounds,
                  self.finetune_steps, self.finetune_wm_steps, self.finetune_updates)
        if min(counts) < 0:
            raise UserError("update counts, steps and rounds must be >= 0")
        if self.prior_fit_learning_rate <= 0:
            raise UserError(f"prior_fit_learning_rate must be positive, got {self.prior_fit_learning_rate}")


@dataclass
class TaskSlot:
    """One task of the one router: its scene (padded observation), text and prior."""

    name: str
    entry: object  # language.CompositeTask
    scene: object  # ExpertScene with state_features set
    text: np.ndarray  # [D] the canonical instruction's embedding
    prior: np.ndarray  # [K]
    phase_priors: np.ndarray | None  # [P, K] a sequence's prior per phase; None: one
    prior_source: str
    eval_steps: int
    wordings: np.ndarray  # [W, D] the embeddings of the task's catalog wordings, the instruction's first

    def texts(self, count: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """[count, D] text inputs for router updates: the instruction's embedding, or with `rng` one of the task's
        wordings drawn for each."""
        if rng is None:
            return np.broadcast_to(self.text, (count, self.text.size))
        return self.wordings[rng.integers(len(self.wordings), size=count)]

    def priors(self, obs: np.ndarray) -> np.ndarray:
        """[N, K] the prior of each (padded) observation [N, obs]: its phase's for a sequence."""
        if self.phase_priors is None:
            return np.broadcast_to(self.prior, (obs.shape[0], self.prior.size))
        from metaworld_x.routing.scripted import phase_of

        return self.phase_priors[np.minimum(phase_of(obs), len(self.phase_priors) - 1)]


@dataclass
class AllTasks:
    """What every stage shares: the config, the experts, each task's slot, the skipped tasks and the runners."""

    config: AllTasksConfig
    experts: object  # ExpertSet
    slots: list[TaskSlot]
    skipped: dict[str, str]  # {task: why}
    runners: dict = field(default_factory=dict)

    def runner(self, slot: TaskSlot, worlds: int):
        """One SceneRunner per (task, worlds), built once: each compiles its scene's step."""
        from metaworld_x.routing.rollouts import SceneRunner

        key = (slot.name, worlds)
        if key not in self.runners:
            self.runners[key] = SceneRunner(slot.scene, self.experts.params, worlds)
        return self.runners[key]

    @property
    def obs_size(self) -> int:
        from metaworld_x.routing.scene import PROPRIOCEPTION_SIZE

        return PROPRIOCEPTION_SIZE + self.config.task_features


def missing_experts(task, expert_names) -> list[str]:
    """The skills `task` (an environment task) needs that are not installed: a sequence's sub-goals' experts."""
    from metaworld_x.routing.scripted import missing_skills

    return missing_skills(task, expert_names) if getattr(task, "subgoals", ()) else []


def prepare_all(config: AllTasksConfig, experts_dir: Path, resolver=None, vlm_cache: Path | None = None,
                without: tuple[str, ...] = ()) -> AllTasks:
    """Load the experts once (all installed ones but `without`); build each task's padded scene; embed its
    instruction and score its prior."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.experts.installed import ExpertSet, installed_experts
    from metaworld_x.routing.language import TaskResolver, composite_task
    from metaworld_x.routing.pipeline import expert_catalog, sequence_priors
    from metaworld_x.routing.scene import build_expert_scene
    from metaworld_x.routing.vlm_prior import prior_scorer, score_prior

    resolver = resolver or TaskResolver()
    dirs = {name: path for name, path in installed_experts(experts_dir).items() if name not in without}
    experts = ExpertSet.load(dirs)
    specs = dict(zip(experts.names, experts.specs))
    scorer = prior_scorer(config.router, vlm_cache, text_encoder=None if config.router.vlm else resolver.encoder)
    catalog = expert_catalog(experts)
    slots, skipped = [], {}
    for name in config.tasks:
        entry = composite_task(name)
        task = make_task(entry.task)
        missing = missing_experts(task, experts.names)
        if missing:
            skipped[name] = f"needs the expert(s) {', '.join(missing)}, not installed"
            print(f"skipping {name}: it {skipped[name]}", flush=True)
            continue
        scene, _ = build_expert_scene(task, dirs, specs, state_features=config.task_features)
        wordings = resolver.embed(list(entry.texts if config.all_wordings else (entry.instruction,))).astype(np.float32)
        text = wordings[0]
        scored = score_prior(scorer, entry.instruction, catalog, scene, config.router.prior_temperature)
        phases = sequence_priors(scorer, scene.objective, catalog, scene, config.router.prior_temperature)
        prior = scored.prior if phases is None else phases[0]
        steps = config.eval_steps or scene.config.episode_length
        slots.append(TaskSlot(name, entry, scene, text, np.asarray(prior, np.float32), phases, scored.source, steps, wordings))
    if not slots:
        raise UserError(f"none of the tasks {', '.join(config.tasks)} has its experts installed: {skipped}")
    return AllTasks(config, experts, slots, skipped)


# ---- the buffer with each episode's task ------------------------------------------------


def _tasks_path(buffer_path: Path) -> Path:
    return Path(buffer_path).with_suffix(".tasks.npy")


def save_tagged(buffer, episode_task: np.ndarray, path: Path) -> None:
    """The buffer and [episodes] task index of each of its episodes, each written atomically (tasks first)."""
    with atomic_path(_tasks_path(path)) as tmp, open(tmp, "wb") as f:
        np.save(f, np.asarray(episode_task, np.int32))
    buffer.save(path)


def load_tagged(path: Path):
    """(buffer, episode_task [episodes])."""
    from metaworld_x.world_model.buffer import ReplayBuffer

    buffer = ReplayBuffer.load(path)
    episode_task = np.load(_tasks_path(path))
    if episode_task.size != buffer.next_episode:
        raise UserError(f"{_tasks_path(path)} names {episode_task.size} episodes' tasks, the buffer holds {buffer.next_episode};"
                        " rerun without --resume")
    return buffer, episode_task


def add_tagged(buffer, episode_task: list, data: dict, task_index: int) -> None:
    """Add a rollout ([T, B, ...] from `collect`) and tag its episodes with `task_index`."""
    first = buffer.next_episode
    buffer.add_rollout(data["obs"], data["cond"], data["reward"], data["next_obs"], data["done"], data["terminated"])
    episode_task.extend([task_index] * (buffer.next_episode - first))


def collect_all(ctx: AllTasks, run_dir: Path) -> dict:
    """Stage 1: the training and held-out buffers, every task's expert and mixture rollouts in one of each."""
    from metaworld_x.routing.rollouts import collect, label_led, one_hot_behaviour
    from metaworld_x.world_model.buffer import ReplayBuffer

    c, k = ctx.config, len(ctx.experts.names)
    report = {}
    for name, steps, seed in (("buffer", c.collect_steps, c.seed), ("heldout", c.heldout_steps, c.seed + 1000)):
        per_task = steps + c.finetune_rounds * c.finetune_steps * 2
        buffer = ReplayBuffer(per_task * c.num_worlds * len(ctx.slots) * 2, ctx.obs_size, k, cond_kind="expert_weights")
        tags: list = []
        for i, slot in enumerate(ctx.slots):
            behaviour = label_led(one_hot_behaviour(k, c.num_worlds, c.mixed_fraction, c.segment, seed + i), slot.priors,
                                  np.arange(c.num_worlds) < round(c.num_worlds * c.led_fraction))
            data = collect(ctx.runner(slot, c.num_worlds), behaviour, jax.random.PRNGKey(seed + i), steps)
            add_tagged(buffer, tags, data, i)
            report.setdefault(name, {})[slot.name] = {"env_steps": int(steps * c.num_worlds), "seconds": float(data["seconds"]),
                                                      "reward_mean": float(data["reward"].mean())}
            print(f"collected {name} in {slot.name}: {steps * c.num_worlds} steps, {float(data['seconds']):.0f} s", flush=True)
        save_tagged(buffer, np.asarray(tags), run_dir / f"{name}.npz")
    return report


# ---- router batches: each sample with its own task's text and prior ---------------------


def sample_groups(ctx: AllTasks, buffer, episode_task: np.ndarray) -> list[list[np.ndarray]]:
    """Per task, the buffer rows of each phase it reached (one group for a task without phases)."""
    from metaworld_x.routing.scripted import phase_of

    rows = np.flatnonzero(buffer.episode >= 0)
    task_of_row = episode_task[buffer.episode[rows]]
    groups = []
    for i, slot in enumerate(ctx.slots):
        own = rows[task_of_row == i]
        if slot.phase_priors is None or own.size == 0:
            groups.append([own] if own.size else [])
            continue
        phases = np.minimum(phase_of(buffer.obs[own]), len(slot.phase_priors) - 1)
        groups.append([own[phases == p] for p in range(len(slot.phase_priors)) if (phases == p).any()])
    return groups


def all_task_batches(ctx: AllTasks, buffer, episode_task: np.ndarray, count: int, seed: int, any_state: bool = False):
    """`count` batches of real start states: equal shares per task (a sequence's split among the phases its rollouts
    reached: its later phases are a few percent of its states, and their labels teach the switch), each with its
    own task's text embedding and prior.

    any_state: a task whose prior does not depend on the state (no phases) draws its states from every task's
    rows, so that the router learns its choice from the text alone and keeps it in states its own rollouts never
    reached (the prior fit); otherwise each task's own states (imagination: the world model's reward is the
    scene's the state came from)."""
    rng = np.random.default_rng(seed)
    groups = sample_groups(ctx, buffer, episode_task)
    if any_state:
        every = np.flatnonzero(buffer.episode >= 0)
        groups = [[every] if slot.phase_priors is None and g else g for slot, g in zip(ctx.slots, groups)]
    present = [i for i, g in enumerate(groups) if g]
    size = ctx.config.batch_size
    for _ in range(count):
        obs, text, prior = [], [], []
        for i, share in zip(present, np.array_split(np.arange(size), len(present))):
            parts = np.array_split(np.arange(share.size), len(groups[i]))
            rows = np.concatenate([rng.choice(g, size=p.size) for g, p in zip(groups[i], parts)]).astype(np.int64)
            slot = ctx.slots[i]
            obs.append(buffer.obs[rows])
            text.append(slot.texts(rows.size, rng))
            prior.append(slot.priors(buffer.obs[rows]))
        yield {"obs": np.concatenate(obs), "text": np.concatenate(text), "prior": np.concatenate(prior).astype(np.float32)}


# ---- stage 3: the router fitted to every task's prior -----------------------------------


def make_prior_fit_update(router, learning_rate: float, max_grad_norm: float):
    """update(params, opt_state, batch) -> (params, opt_state, kl), jitted; batch: obs [B, obs], text [B, D], prior [B, K]."""
    from metaworld_x.routing.network import kl_divergence

    optimizer = optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate))

    def loss(params, batch):
        return jnp.mean(kl_divergence(batch["prior"], router.logits(params, batch["obs"], batch["text"])))

    @jax.jit
    def update(params, opt_state, batch):
        kl, grads = jax.value_and_grad(loss)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, kl

    return optimizer, update


def fit_prior(router, params, batches, learning_rate: float = 1e-3) -> tuple[object, list[float]]:
    """The router's parameters after one supervised KL step per batch; the KL of each."""
    optimizer, update = make_prior_fit_update(router, learning_rate, router.config.max_grad_norm)
    opt_state = optimizer.init(params)
    history = []
    for batch in batches:
        params, opt_state, kl = update(params, opt_state, {k: jnp.asarray(v) for k, v in batch.items()})
        history.append(float(kl))
    return params, history


# ---- imagination, fine-tuning and evaluation over all tasks -----------------------------


def make_one_router(ctx: AllTasks, config: RouterConfig):
    from metaworld_x.routing.network import Router

    return Router(config, ctx.obs_size, int(ctx.slots[0].text.size), tuple(ctx.experts.names))


def imagine_all(ctx: AllTasks, buffer_path: Path, router, model, wm_params, params, vlm_weight, updates: int, seed: int):
    """Router updates in imagination from `params` (the trust region's centre) and `vlm_weight`."""
    from metaworld_x.routing.learner import init_router_state, restart_stage, train_router

    state = restart_stage(init_router_state(router, jax.random.PRNGKey(seed), model, wm_params), params)
    state = state.replace(vlm_weight=np.float32(vlm_weight))
    if updates == 0:
        return state.params, float(state.vlm_weight), {}
    buffer, tags = load_tagged(buffer_path)
    state, history = train_router(router, state, all_task_batches(ctx, buffer, tags, updates, seed), model, wm_params)
    return state.params, float(state.vlm_weight), {k: np.asarray(v)[::10].tolist() for k, v in history.items()}


def finetune_collect_all(ctx: AllTasks, source: Path, target: Path, router, params, round_index: int) -> dict:
    """The router's rollouts (with exploration) in every task's scene, each with its own text, added to the buffer."""
    from metaworld_x.routing.rollouts import collect, router_behaviour

    c = ctx.config
    buffer, tags = load_tagged(source)
    tags, report = list(tags), {"env_steps": 0, "seconds": 0.0}
    for i, slot in enumerate(ctx.slots):
        seed = c.seed + 100 + 97 * round_index + i
        behaviour = router_behaviour(router, params, slot.text, c.finetune_explore, seed=seed)
        data = collect(ctx.runner(slot, c.num_worlds), behaviour, jax.random.PRNGKey(seed), c.finetune_steps)
        add_tagged(buffer, tags, data, i)
        report["env_steps"] += c.finetune_steps * c.num_worlds
        report["seconds"] += float(data["seconds"])
    save_tagged(buffer, np.asarray(tags), target)
    return report


def evaluate_all(ctx: AllTasks, router, params, seed: int) -> dict:
    """Per task: the router's evaluation summary with that task's instruction (a sequence's with its sub-goals);
    plus the total successes and the mean return over tasks."""
    from metaworld_x.routing.rollouts import router_behaviour

    return evaluate_behaviours(ctx, lambda slot: router_behaviour(router, params, slot.text), seed)


def evaluate_behaviours(ctx: AllTasks, behaviour_for, seed: int) -> dict:
    """`evaluate_all` for any behaviour: behaviour_for(slot) drives that task's evaluation episodes."""
    from metaworld_x.routing.rollouts import run_episodes
    from metaworld_x.routing.sequence_report import sequence_record

    c, tasks, seconds = ctx.config, {}, 0.0
    for slot in ctx.slots:
        results = run_episodes(ctx.runner(slot, c.eval_episodes), behaviour_for(slot),
                               jax.random.PRNGKey(seed + 10_000), slot.eval_steps)
        tasks[slot.name] = results.summary()
        goals = getattr(slot.scene.objective, "subgoals", ())
        if goals:
            tasks[slot.name]["sequence"] = sequence_record(results, ctx.experts.names, goals)
        seconds += results.seconds
    return {"tasks": tasks, "success": sum(t["success"] for t in tasks.values()),
            "episodes": sum(t["episodes"] for t in tasks.values()),
            "return_mean": float(np.mean([t["return_mean"] for t in tasks.values()])), "seconds": seconds}


def _eval_line(name: str, evaluation: dict) -> str:
    per_task = ", ".join(f"{t} {v['success']}/{v['episodes']}" for t, v in evaluation["tasks"].items())
    return f"[{name}] {evaluation['success']}/{evaluation['episodes']} successes ({per_task})"


def starting_router(ctx: AllTasks, router, model, wm_params, progress: dict):
    """The router's parameters fitted to every task's prior (fresh ones for a router without it); the fit's KL
    curve and time go into `progress`."""
    from metaworld_x.routing.learner import init_router_state

    c, start = ctx.config, time.perf_counter()
    params = init_router_state(router, jax.random.PRNGKey(c.seed), model, wm_params).params
    if router.config.use_vlm:
        buffer, tags = load_tagged(Path(progress["buffer"]))
        batches = all_task_batches(ctx, buffer, tags, c.prior_fit_updates, c.seed, any_state=True)
        params, history = fit_prior(router, params, batches, c.prior_fit_learning_rate)
        progress["prior_fit"] = history[::10] + history[-1:]
        print(f"prior fit: KL {history[0] if history else float('nan'):.3f} -> {history[-1] if history else float('nan'):.3f}"
              f" over {len(history)} updates", flush=True)
    progress["seconds"]["prior_fit"] += time.perf_counter() - start
    return params


def train_all(ctx: AllTasks, run_dir: Path, name: str = "full", router_config: RouterConfig | None = None,
              evaluate_start: bool = True) -> dict:
    """Prior fit, imagination, fine-tune rounds; resumes at the first round it had not finished.

    name, router_config: a variant (an ablation) trained in run_dir/name on the same data and budget; without
    use_vlm it starts from fresh weights instead of the prior fit. evaluate_start: evaluate the starting router too
    (what ships is the best evaluated stage)."""
    from metaworld_x.routing.checkpoint import load_router, save_router
    from metaworld_x.routing.pipeline import train_wm
    from metaworld_x.world_model.checkpoint import load_world_model, save_world_model

    c = ctx.config
    work = run_dir / name
    work.mkdir(parents=True, exist_ok=True)
    progress = _read_json(work / "progress.json") or {
        "round": -2, "buffer": str(run_dir / "buffer.npz"), "world_model": str(run_dir / WM_DIR), "router": None,
        "vlm_weight": (router_config or c.router).initial_vlm_weight, "env_steps": c.num_worlds * c.collect_steps * len(ctx.slots),
        "evals": [], "prior_fit": [], "imagination": [], "world_model_rounds": [],
        "seconds": {"prior_fit": 0.0, "collect": 0.0, "world_model": 0.0, "imagination": 0.0, "eval": 0.0},
    }
    model, wm_params, _ = load_world_model(Path(progress["world_model"]))
    router = make_one_router(ctx, router_config or c.router)
    params = load_router(Path(progress["router"]), ctx.experts)[1] if progress["router"] else None

    def keep(r: int, params, label: str):  # an evaluation of all tasks costs more than a round: saved, not evaluated
        folder = work / f"router_{label}"
        save_router(folder, router, params, ctx.experts)
        progress.update(round=r, router=str(folder))
        write_json(work / "progress.json", progress)

    def finish(r: int, params, label: str):
        folder = work / f"router_{label}"
        save_router(folder, router, params, ctx.experts)
        evaluation = evaluate_all(ctx, router, params, c.seed)
        progress["seconds"]["eval"] += evaluation["seconds"]
        progress["evals"].append({"round": r, "env_steps": progress["env_steps"], "router": str(folder), **evaluation})
        progress.update(round=r, router=str(folder))
        write_json(work / "progress.json", progress)  # the stage counts as done only once this is written
        print(_eval_line(label if name == "full" else f"{name} {label}", evaluation) + f", vlm_weight {progress['vlm_weight']:.4f}", flush=True)

    if progress["round"] == -2:  # stage 3: the router as it starts
        params = starting_router(ctx, router, model, wm_params, progress)
        (finish if evaluate_start else keep)(-1, params, "start")
    for r in range(progress["round"] + 1, c.finetune_rounds + 1):
        buffer_path = Path(progress["buffer"])
        if r > 0:
            target = work / f"buffer_{r}.npz"
            info = finetune_collect_all(ctx, buffer_path, target, router, params, r)
            buffer_path = target
            progress["env_steps"] += info["env_steps"]
            progress["seconds"]["collect"] += info["seconds"]
            model, wm_params, _, wm_report = train_wm(c.world_model, buffer_path, run_dir / "heldout.npz",
                                                      c.finetune_wm_steps, wm_params, c.seed + r)
            save_world_model(work / f"{WM_DIR}_{r}", model, wm_params)
            progress["world_model"] = str(work / f"{WM_DIR}_{r}")
            progress["seconds"]["world_model"] += wm_report["seconds"]
            progress["world_model_rounds"].append({"round": r, **wm_report})
        start = time.perf_counter()
        updates = c.imagination_updates if r == 0 else c.finetune_updates
        params, vlm_weight, history = imagine_all(ctx, buffer_path, router, model, wm_params, params,
                                                  progress["vlm_weight"], updates, c.seed + r)
        progress["seconds"]["imagination"] += time.perf_counter() - start
        progress["imagination"].append({"round": r, **history})
        progress.update(buffer=str(buffer_path), vlm_weight=vlm_weight)
        (finish if c.eval_every_round or r == c.finetune_rounds else keep)(r, params, str(r))
    # Real rollouts pick what ships: the stage with the most successes over all tasks, then the highest mean return.
    best = max(progress["evals"], key=lambda e: (e["success"], e["return_mean"]))
    progress["selected"] = {k: v for k, v in best.items() if k != "tasks"}
    progress["router_params"] = load_router(Path(best["router"]), ctx.experts)[1]
    progress["router_object"] = router
    progress["selected_evaluation"] = best
    return progress


# ---- the whole run ----------------------------------------------------------------------


def run_all_tasks(config: AllTasksConfig, experts_dir: Path, run_dir: Path, out_dir: Path, resume: bool = False,
                  vlm_cache: Path | None = None, ablations: bool = False) -> Path:
    """Train the one router on `config.tasks` and ship it to out_dir/all; returns that folder.

    ablations: also train its ablations on the same data and budget, and measure the scripted baseline and
    leave-one-out (`one_router_ablations`), recorded in its metrics.json."""
    wall = time.perf_counter()
    ctx = prepare_all(config, experts_dir, vlm_cache=vlm_cache)
    run_dir = Path(run_dir) / ALL_TASKS_DIR
    full, stages = fit_one_router(ctx, run_dir, resume)
    variants = {}
    if ablations:
        from metaworld_x.routing.one_router_ablations import run_ablations

        variants = run_ablations(ctx, run_dir, full, experts_dir, vlm_cache)
    return ship_all(ctx, out_dir, full, stages, time.perf_counter() - wall, variants)


MAPS_PER_TASK = 6_000
"""Memory maps per task that the XLA CPU code of its scene, the router and the world model take. Measured: a run
over 14 tasks and 12 experts stopped twice with "Cannot allocate memory" under Linux's default vm.max_map_count of
65,530, with 23 GB free; resumed with the limit raised, its process held 58,000 maps before its first fine-tune
round."""


def map_count_warning(tasks: int, path: Path = Path("/proc/sys/vm/max_map_count")) -> str | None:
    """A line saying the kernel's memory-map limit is too low for `tasks` compiled scenes, or None. Past it LLVM
    stops compiling with "Cannot allocate memory" however much memory is free."""
    try:
        limit = int(path.read_text())
    except (OSError, ValueError):
        return None  # not Linux, or not readable: nothing to say
    needed = tasks * MAPS_PER_TASK
    if limit >= needed:
        return None
    return (f"warning: vm.max_map_count is {limit:,}, and {tasks} tasks' compiled scenes need about {needed:,} memory"
            f" maps; past it compilation stops with 'LLVM compilation error: Cannot allocate memory'. Raise it"
            f" (sudo sysctl -w vm.max_map_count={max(262_144, needed)}), or train fewer tasks (--tasks)")


def fit_one_router(ctx: AllTasks, run_dir: Path, resume: bool = False) -> tuple[dict, dict]:
    """Stages 1-5 in run_dir: (train_all's progress, the collection and world-model stages)."""
    from metaworld_x.routing.pipeline import train_wm
    from metaworld_x.world_model.checkpoint import save_world_model

    config = ctx.config
    if (warning := map_count_warning(len(ctx.slots))) is not None:
        import sys

        print(warning, file=sys.stderr, flush=True)
    record = json.loads(json.dumps({"tasks": [s.name for s in ctx.slots], "experts": ctx.experts.record(),
                                    "config": dataclasses.asdict(config)}))
    previous = _read_json(run_dir / "context.json")
    if run_dir.exists() and not resume:
        shutil.rmtree(run_dir)
    elif previous is not None and previous != record:
        raise UserError(f"{run_dir} holds a run with other tasks, experts or settings; rerun without --resume to start over")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / "context.json", record)
    print(f"one router for {len(ctx.slots)} tasks ({', '.join(s.name for s in ctx.slots)}); experts"
          f" {', '.join(ctx.experts.names)}; observation {ctx.obs_size} (features padded to {config.task_features})", flush=True)

    stages = _read_json(run_dir / "stages.json", {})
    if "collect" not in stages:
        stages["collect"] = collect_all(ctx, run_dir)
        write_json(run_dir / "stages.json", stages)
    if "world_model" not in stages:
        model, wm_params, history, report = train_wm(config.world_model, run_dir / "buffer.npz", run_dir / "heldout.npz",
                                                     config.wm_steps, seed=config.seed)
        save_world_model(run_dir / WM_DIR, model, wm_params, meta={"k_step": report["k_step"]})
        stages["world_model"] = {**report, "history": history}
        write_json(run_dir / "stages.json", stages)
    print("world model: k-step latent error (relative) "
          + ", ".join(f"k={k}: {v['latent_mse_relative']:.3f}" for k, v in stages["world_model"]["k_step"].items()), flush=True)
    return train_all(ctx, run_dir), stages


def ship_all(ctx: AllTasks, out_dir: Path, full: dict, stages: dict, wall_clock: float, ablations: dict | None = None) -> Path:
    """Write router/all/ as a whole: staged in a sibling folder, then swapped in by renames."""
    from metaworld_x.routing.checkpoint import save_router
    from metaworld_x.world_model.checkpoint import load_world_model, save_world_model

    out_dir = Path(out_dir)
    final, staging = out_dir / ALL_TASKS_DIR, out_dir / f".{ALL_TASKS_DIR}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    model, wm_params, _ = load_world_model(Path(full["world_model"]))
    save_world_model(staging / WM_DIR, model, wm_params)
    c = ctx.config
    tasks = {s.name: {"task_env": s.entry.task, "scene": s.entry.scene, "instruction": s.entry.instruction,
                      "success_criterion": s.entry.success, "text_embedding": s.text.tolist(),
                      "wordings_trained": list(s.entry.texts[: len(s.wordings)]), "prior": s.prior.tolist(),
                      "phase_priors": None if s.phase_priors is None else s.phase_priors.tolist(),
                      "prior_source": s.prior_source, "eval_steps": s.eval_steps} for s in ctx.slots}
    meta = {"tasks": tasks, "skipped_tasks": ctx.skipped, "task_features": c.task_features,
            "state_layout": f"proprioception [49] + zeros + the task's features, right-aligned in {c.task_features} columns",
            "vlm_weight_final": full["vlm_weight"], "selected_round": full["selected"]["round"]}
    save_router(staging, full["router_object"], full["router_params"], ctx.experts, meta=meta)
    seconds = {"collect_experts": sum(v["seconds"] for part in stages["collect"].values() for v in part.values()),
               "world_model": stages["world_model"]["seconds"] + full["seconds"]["world_model"],
               "prior_fit": full["seconds"]["prior_fit"], "imagination": full["seconds"]["imagination"],
               "collect_router": full["seconds"]["collect"], "evaluation": full["seconds"]["eval"]}
    seconds["training_total"] = sum(v for k, v in seconds.items() if k != "evaluation")
    metrics = {
        "tasks": [s.name for s in ctx.slots], "skipped_tasks": ctx.skipped, "experts": ctx.experts.record(),
        "world_model": {"k_step_expert_data": stages["world_model"]["k_step"],
                        "k_step_after_finetune": full["world_model_rounds"][-1]["k_step"] if full["world_model_rounds"] else None},
        "env_steps": full["env_steps"], "seconds": seconds, "wall_clock_s": wall_clock,
        "evals": full["evals"], "selected": full["selected"], "selected_evaluation": full["selected_evaluation"],
        "prior_fit_kl": full["prior_fit"], "machine": describe_machine(), "config": dataclasses.asdict(c),
        "ablations": ablations or {},
    }
    write_json(staging / "metrics.json", metrics)
    return replace_folder(staging, final)


# ---- reading a shipped router, per task -------------------------------------------------


def is_one_router(record: dict) -> bool:
    """Whether a router.json record is the one router of all tasks (it names its tasks) rather than one task's."""
    return "tasks" in record


def task_view(record: dict, task: str | None, router_dir: Path | str = "the router") -> dict:
    """A router record seen for one task: task, task_env, instruction, text_embedding, eval_steps and
    state_features (the padded width, or None for a per-task router). For the one router, `task` picks the
    task (a UserError lists its tasks when it is not one); a per-task router is its own task's."""
    if not is_one_router(record):
        if task is not None and task != record["task"]:
            raise UserError(f"the router in {router_dir} is {record['task']!r}'s, not {task!r}'s")
        return {**record, "state_features": None}
    if task not in record["tasks"]:
        skipped = record.get("skipped_tasks", {})
        why = f" ({task} was skipped: it {skipped[task]})" if task in skipped else ""
        raise UserError(f"the one router in {router_dir} was not trained on {task!r}{why}; its tasks:"
                        f" {', '.join(record['tasks'])}")
    return {**record, **record["tasks"][task], "task": task, "state_features": record["task_features"]}
