"""`metaworld-x train router`: from the installed experts and an instruction to a shipped router.

Stages (each written atomically to the run folder; a killed run resumes at
the first stage it had not finished):

1. collect: rollouts in the task's ExpertScene on the cpu backend, each
   world driven by one expert alone or by random mixtures (Dirichlet(1),
   redrawn every `segment` steps); a held-out set from other seeds;
2. world model: trained on (router observation, expert weights, reward,
   termination); k-step errors (k = 1, 5, 20) on the held-out rollouts;
3. imagination: the router's actor-critic in the world model, with
   vlm_weight·KL(prior ‖ router) decaying by `router.vlm_decay` per update;
4. fine-tune rounds: the router's own real rollouts (with some exploration)
   join the buffer, the world model trains on, imagination continues;
5. ship: router/<task>/ (params, config, expert-set record, world model,
   metrics.json, curves.png), replaced as a whole by one rename.

With `ablations`, the same data and budget train three more variants: no
VLM prior (use_vlm=False), no world model (REINFORCE on real rollouts with
the same number of environment steps), no router (the prior's top expert
alone); their evaluations go into metrics.json.
"""

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import jax
import numpy as np

from metaworld_x.atomic import replace_folder, write_text
from metaworld_x.errors import UserError
from metaworld_x.json_file import jsonable
from metaworld_x.machine import describe_machine
from metaworld_x.routing.config import RouterConfig
from metaworld_x.experts.installed import installed_experts
from metaworld_x.world_model.config import WorldModelConfig

WM_DIR, ROUTER_STAGE = "world_model", "router"


def _default_world_model() -> WorldModelConfig:
    # Sized for a 2-core CPU: a (256, 256) model with 256-window batches took over 10 minutes for 3000 steps there.
    return WorldModelConfig(latent_size=64, hidden=(128, 128), encoder_hidden=(128,), batch_size=64, horizon=5, num_q=2)


def _default_router() -> RouterConfig:
    return RouterConfig(imagination_horizon=5, entropy_coef=0.01)


@dataclass(frozen=True)
class RouterTrainConfig:
    """Everything `train router` decides. The defaults fit one task in about 20 minutes on a 2-core CPU."""

    task: str = "stand still"
    """An instruction, or a task name from the catalog (fetch, push, door, sit, stand, run, crawl, reach)."""
    num_worlds: int = 32
    """Parallel simulations while collecting."""
    collect_steps: int = 300
    """Control steps per world of the expert rollouts."""
    mixed_fraction: float = 0.5
    """Share of collection worlds driven by random mixtures instead of one expert."""
    segment: int = 50
    """Control steps a random mixture is held."""
    heldout_worlds: int | None = None
    """Simulations of the held-out rollouts (other seeds) for the k-step errors; default num_worlds (one compiled shape)."""
    heldout_steps: int = 100
    """Control steps per held-out world; at least 20 for the 20-step error."""
    wm_steps: int = 3000
    """World-model gradient steps on the expert data."""
    imagination_updates: int = 600
    """Router updates in imagination before the first fine-tune round."""
    finetune_rounds: int = 2
    """Rounds of real router rollouts, world-model updates and more imagination."""
    finetune_steps: int = 150
    """Control steps per world per fine-tune round."""
    finetune_explore: float = 0.2
    """Weight of a Dirichlet(1) draw mixed into the router's weights while fine-tuning (exploration)."""
    finetune_wm_steps: int = 500
    """World-model gradient steps per fine-tune round."""
    finetune_updates: int = 200
    """Imagination updates per fine-tune round."""
    batch_size: int = 128
    """Start states per router update."""
    eval_episodes: int = 10
    """Seeded evaluation episodes (one world each)."""
    eval_steps: int | None = None
    """Steps per evaluation episode; default the task's episode length."""
    ablations: bool = False
    """Also train and evaluate the no-VLM, no-world-model and no-router variants."""
    sequence_vlm_decay: float = 0.999
    """The KL weight's decay per update on a sequential task, if slower than `router.vlm_decay`: the phase labels
    are the only signal that tells the phases apart (a world model sees one step of any expert as much the same),
    and at 0.99 the walk_reach router kept walk alone through the touch (0/10)."""
    seed: int = 0
    """Seed of collection, training and evaluation."""
    world_model: WorldModelConfig = field(default_factory=_default_world_model)
    """The world model."""
    router: RouterConfig = field(default_factory=_default_router)
    """The router and its imagination training."""

    def __post_init__(self):
        for name in ("num_worlds", "collect_steps", "heldout_worlds", "wm_steps", "batch_size", "eval_episodes"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise UserError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.heldout_steps < 20:
            raise UserError(f"heldout_steps must be at least 20 for the 20-step error, got {self.heldout_steps}")
        if not 0 <= self.mixed_fraction <= 1 or not 0 <= self.finetune_explore <= 1:
            raise UserError("mixed_fraction and finetune_explore must be in [0, 1]")
        if min(self.imagination_updates, self.finetune_rounds, self.finetune_updates, self.finetune_wm_steps) < 0:
            raise UserError("update counts and rounds must be >= 0")


@dataclass
class Context:
    """What every stage shares: the task, the experts, the scene, the text and the prior."""

    config: RouterTrainConfig
    resolution: object  # language.Resolution
    experts: object  # ExpertSet
    scene: object  # ExpertScene
    observation_record: dict
    text: np.ndarray  # [D]
    prior: np.ndarray  # [K]
    prior_source: str
    prior_record: dict  # which scorer made the prior, on what frame (vlm_prior.score_prior)
    phase_priors: np.ndarray | None = None  # [P, K] a sequence's prior in each phase (its sub-goal's clause); None: one

    @property
    def eval_steps(self) -> int:
        return self.config.eval_steps or self.scene.config.episode_length


def expert_catalog(experts) -> "object":
    """The VLM catalog restricted to the installed experts (descriptions from the default catalog, else policy.json)."""
    from metaworld_x.experts.catalog import DEFAULT_CATALOG, Expert, ExpertCatalog

    known = {e.name: e for e in DEFAULT_CATALOG.experts}
    entries = tuple(known.get(n) or Expert(n, s.get("description", n)) for n, s in zip(experts.names, experts.specs))
    default = "stand" if "stand" in experts.names else experts.names[0]
    return ExpertCatalog(entries, default=default)


def prepare_context(config: RouterTrainConfig, experts_dir: Path, resolver=None, vlm_cache: Path | None = None) -> Context:
    """Resolve the instruction, load the experts, build the scene, embed the text and score the prior.

    vlm_cache: the prior's label cache (None: metaworld_x.vlm.default_cache_dir()).
    """
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.language import TASK_NAMES, TaskResolver, composite_task
    from metaworld_x.routing.scene import build_expert_scene
    from metaworld_x.routing.vlm_prior import prior_scorer, score_prior

    resolver = resolver or TaskResolver()
    if config.task in TASK_NAMES:
        entry = composite_task(config.task)
        resolution = resolver.resolve(entry.instruction)
    else:
        resolution = resolver.resolve(config.task)
    dirs = installed_experts(experts_dir)
    experts = ExpertSet.load(dirs)
    scene, record = build_expert_scene(make_task(resolution.task.task), dirs, dict(zip(experts.names, experts.specs)))
    text = resolver.embed([resolution.instruction])[0].astype(np.float32)
    scorer = prior_scorer(config.router, vlm_cache, text_encoder=None if config.router.vlm else resolver.encoder)
    scored = score_prior(scorer, resolution.instruction, expert_catalog(experts), scene, config.router.prior_temperature)
    phases = sequence_priors(scorer, scene.objective, expert_catalog(experts), scene, config.router.prior_temperature)
    prior = scored.prior if phases is None else phases[0]
    if phases is not None:  # the labels are what tells the phases apart: they decay more slowly
        config = replace(config, router=replace(config.router, vlm_decay=max(config.router.vlm_decay, config.sequence_vlm_decay)))
    return Context(config, resolution, experts, scene, record, text, prior, scored.source, scored.record, phases)


def sequence_priors(scorer, task, catalog, scene, temperature: float) -> np.ndarray | None:
    """[P, K] the prior of each phase of a sequence: its sub-goal's clause (`subgoal_label`), scored like an
    instruction (the state described by what it asks for next), so the supervision changes as
    sub-goals are reached; None for a task without sub-goals. Scores are cached on disk by the scorer, like the
    instruction's."""
    from metaworld_x.routing.instructions import subgoal_label
    from metaworld_x.routing.vlm_prior import score_prior

    subgoals = getattr(task, "subgoals", ())
    if not subgoals:
        return None
    return np.stack([score_prior(scorer, subgoal_label(goal.clause, goal.prop), catalog, scene, temperature).prior
                     for goal in subgoals])


def batch_prior(ctx: "Context", obs: np.ndarray) -> np.ndarray:
    """The prior of each state [N, K] (a sequence's phase's, read from the observation), or the task's [K]."""
    if ctx.phase_priors is None:
        return ctx.prior
    from metaworld_x.routing.scripted import phase_of

    return ctx.phase_priors[np.minimum(phase_of(obs), len(ctx.phase_priors) - 1)]


# ---- small persistence helpers ---------------------------------------------------------


def write_json(path: Path, payload) -> None:
    write_text(path, json.dumps(payload, indent=2, default=jsonable))


def _read_json(path: Path, default=None):
    return json.loads(Path(path).read_text()) if Path(path).is_file() else default


# ---- the stages ------------------------------------------------------------------------


def make_runner(ctx: Context, num_worlds: int):
    from metaworld_x.routing.rollouts import SceneRunner

    return SceneRunner(ctx.scene, ctx.experts.params, num_worlds)


def collect_expert_data(ctx: Context, run_dir: Path):
    """Stage 1: the training buffer and the held-out buffer, from the experts and random mixtures."""
    from metaworld_x.routing.rollouts import collect, one_hot_behaviour
    from metaworld_x.world_model.buffer import ReplayBuffer

    c, k = ctx.config, len(ctx.experts.names)
    out = {}
    for name, worlds, steps, seed in (("buffer", c.num_worlds, c.collect_steps, c.seed),
                                       ("heldout", c.heldout_worlds or c.num_worlds, c.heldout_steps, c.seed + 1000)):
        runner = make_runner(ctx, worlds)
        data = collect(runner, one_hot_behaviour(k, worlds, c.mixed_fraction, c.segment, seed), jax.random.PRNGKey(seed), steps)
        obs_size = data["obs"].shape[-1]
        capacity = (c.collect_steps + c.finetune_rounds * c.finetune_steps * 2) * max(worlds, 1) * 2
        buffer = ReplayBuffer(capacity, obs_size, k, cond_kind="expert_weights")
        buffer.add_rollout(data["obs"], data["cond"], data["reward"], data["next_obs"], data["done"], data["terminated"])
        buffer.save(run_dir / f"{name}.npz")
        out[name] = {"env_steps": int(steps * worlds), "seconds": float(data["seconds"]),
                     "reward_mean": float(data["reward"].mean()), "episodes_ended": int(data["done"].sum())}
    return out


def train_wm(config: WorldModelConfig, buffer_path: Path, heldout_path: Path, steps: int, params=None, seed: int = 0):
    """Stage 2 (and each fine-tune round): world-model gradient steps on the buffer; k-step errors on held-out data."""
    from metaworld_x.world_model.buffer import ReplayBuffer
    from metaworld_x.world_model.evaluate import k_step_error
    from metaworld_x.world_model.model import WorldModel
    from metaworld_x.world_model.train import train_world_model

    buffer = ReplayBuffer.load(buffer_path)
    heldout = ReplayBuffer.load(heldout_path)
    start = time.perf_counter()
    params, history = train_world_model(config, buffer, jax.random.PRNGKey(seed), steps, params)
    seconds = time.perf_counter() - start
    model = WorldModel(config, buffer.obs_size, buffer.cond_size)
    sequences = heldout.sequences(20, 256, np.random.default_rng(0))
    errors = k_step_error(model, params, sequences, (1, 5, 20))
    # the latent error on its own scale is hard to read; relative to the spread of encoded held-out states it is not
    encoded = np.asarray(model.encode(params, np.asarray(sequences["obs"][:, 0])))
    spread = float(np.mean(np.var(encoded, axis=0)))
    report = {str(k): {**v, "latent_mse_relative": v["latent_mse"] / max(spread, 1e-12)} for k, v in errors.items()}
    return model, params, history, {"k_step": report, "seconds": seconds, "steps": steps,
                                    "transitions": buffer.num_transitions, "heldout_transitions": heldout.num_transitions}


def router_batches(ctx: Context, buffer, count: int, seed: int):
    """`count` batches of real start states from the buffer, with the task's text and prior. A sequence's batches
    hold each phase the buffer reached in equal shares: the later phases are a few percent of the states (walk_reach:
    the experts' rollouts reach the touch in a fraction of the steps), and their labels are what teaches the switch."""
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(buffer.episode >= 0)
    groups = [rows]
    if ctx.phase_priors is not None:
        from metaworld_x.routing.scripted import phase_of

        phases = np.minimum(phase_of(buffer.obs[rows]), len(ctx.phase_priors) - 1)
        groups = [rows[phases == p] for p in range(len(ctx.phase_priors)) if (phases == p).any()]
    size = ctx.config.batch_size
    text = np.broadcast_to(ctx.text, (size, ctx.text.size))
    for _ in range(count):
        shares = np.array_split(np.arange(size), len(groups))
        obs = buffer.obs[np.concatenate([rng.choice(g, size=len(s)) for g, s in zip(groups, shares)])]
        yield {"obs": obs, "text": text, "prior": batch_prior(ctx, obs)}


def make_router(ctx: Context, router_config: RouterConfig, obs_size: int):
    from metaworld_x.routing.network import Router

    return Router(router_config, obs_size, int(ctx.text.size), tuple(ctx.experts.names))


def imagination_stage(ctx, buffer_path: Path, router, model, wm_params, params, vlm_weight, updates: int, seed: int):
    """Router updates in imagination, continuing from `params` (None: fresh, started at the prior) and `vlm_weight`."""
    from metaworld_x.routing.learner import init_router_state, restart_stage, train_router
    from metaworld_x.world_model.buffer import ReplayBuffer

    state = init_router_state(router, jax.random.PRNGKey(seed), model, wm_params, prior=ctx.prior)
    if params is not None:
        state = restart_stage(state, params)
    if vlm_weight is not None:
        state = state.replace(vlm_weight=np.float32(vlm_weight))
    if updates == 0:
        return state.params, float(state.vlm_weight), {}
    buffer = ReplayBuffer.load(buffer_path)
    state, history = train_router(router, state, router_batches(ctx, buffer, updates, seed), model, wm_params)
    summary = {k: np.asarray(v).tolist() for k, v in history.items()}
    return state.params, float(state.vlm_weight), summary


def evaluate_behaviour(ctx: Context, behaviour, seed: int):
    from metaworld_x.routing.rollouts import run_episodes

    runner = make_runner(ctx, ctx.config.eval_episodes)
    return run_episodes(runner, behaviour, jax.random.PRNGKey(seed), ctx.eval_steps)


def finetune_collect(ctx: Context, source: Path, target: Path, router, params, round_index: int):
    """Real rollouts of the router (with exploration), added to the training buffer."""
    from metaworld_x.routing.rollouts import collect, router_behaviour
    from metaworld_x.world_model.buffer import ReplayBuffer

    c = ctx.config
    behaviour = router_behaviour(router, params, ctx.text, c.finetune_explore, seed=c.seed + 100 + round_index)
    data = collect(make_runner(ctx, c.num_worlds), behaviour, jax.random.PRNGKey(c.seed + 100 + round_index), c.finetune_steps)
    buffer = ReplayBuffer.load(source)
    buffer.add_rollout(data["obs"], data["cond"], data["reward"], data["next_obs"], data["done"], data["terminated"])
    buffer.save(target)
    return {"env_steps": int(c.finetune_steps * c.num_worlds), "seconds": float(data["seconds"]),
            "reward_mean": float(data["reward"].mean())}


# ---- variants: imagination + fine-tune (full, no VLM), model-free, fixed expert ----------


def _history_tail(history: dict, every: int = 10) -> dict:
    """Imagination metrics thinned to every `every`-th update (metrics.json stays small)."""
    return {k: np.asarray(v)[::every].tolist() for k, v in history.items()}


def train_with_world_model(ctx: Context, run_dir: Path, name: str, router_config: RouterConfig) -> dict:
    """Imagination, then fine-tune rounds, for one variant; resumes at the first round it had not finished."""
    from metaworld_x.routing.checkpoint import load_router, save_router
    from metaworld_x.routing.rollouts import router_behaviour
    from metaworld_x.world_model.checkpoint import load_world_model, save_world_model

    c = ctx.config
    work = run_dir / name
    work.mkdir(parents=True, exist_ok=True)
    progress = _read_json(work / "progress.json") or {
        "round": -1, "buffer": str(run_dir / "buffer.npz"), "world_model": str(run_dir / WM_DIR), "router": None,
        "vlm_weight": None, "env_steps": c.num_worlds * c.collect_steps, "evals": [], "imagination": [],
        "world_model_rounds": [], "seconds": {"collect": 0.0, "world_model": 0.0, "imagination": 0.0, "eval": 0.0},
    }
    model, wm_params, _ = load_world_model(Path(progress["world_model"]))
    router = make_router(ctx, router_config, model.obs_size)
    params = load_router(Path(progress["router"]), ctx.experts)[1] if progress["router"] else None
    if progress["round"] == -1 and not progress["evals"]:  # the router as it starts: at the prior (or uniform without it)
        params, _, _ = imagination_stage(ctx, Path(progress["buffer"]), router, model, wm_params, None, None, 0, c.seed)
        save_router(work / f"{ROUTER_STAGE}_start", router, params, ctx.experts)
        results = evaluate_behaviour(ctx, router_behaviour(router, params, ctx.text), c.seed + 10_000)
        progress["seconds"]["eval"] += results.seconds
        progress["evals"].append({"round": -1, "env_steps": progress["env_steps"], "router": str(work / f"{ROUTER_STAGE}_start"),
                                  **results.summary()})
        progress["router"] = str(work / f"{ROUTER_STAGE}_start")
        write_json(work / "progress.json", progress)
        print(f"[{name}] start: {results.summary()['success']}/{c.eval_episodes} successes, return {results.returns.mean():.1f}", flush=True)
    for r in range(progress["round"] + 1, c.finetune_rounds + 1):
        buffer_path = Path(progress["buffer"])
        if r > 0:
            target = work / f"buffer_{r}.npz"
            info = finetune_collect(ctx, buffer_path, target, router, params, r)
            buffer_path = target
            progress["env_steps"] += info["env_steps"]
            progress["seconds"]["collect"] += info["seconds"]
            model, wm_params, _, wm_report = train_wm(c.world_model, buffer_path, run_dir / "heldout.npz", c.finetune_wm_steps, wm_params, c.seed + r)
            save_world_model(work / f"{WM_DIR}_{r}", model, wm_params)
            progress["world_model"] = str(work / f"{WM_DIR}_{r}")
            progress["seconds"]["world_model"] += wm_report["seconds"]
            progress["world_model_rounds"].append({"round": r, **wm_report})
        start = time.perf_counter()
        updates = c.imagination_updates if r == 0 else c.finetune_updates
        params, vlm_weight, history = imagination_stage(
            ctx, buffer_path, router, model, wm_params, params, progress["vlm_weight"], updates, c.seed + r)
        progress["seconds"]["imagination"] += time.perf_counter() - start
        save_router(work / f"{ROUTER_STAGE}_{r}", router, params, ctx.experts)
        results = evaluate_behaviour(ctx, router_behaviour(router, params, ctx.text), c.seed + 10_000)
        progress["seconds"]["eval"] += results.seconds
        progress["evals"].append({"round": r, "env_steps": progress["env_steps"], "router": str(work / f"{ROUTER_STAGE}_{r}"),
                                  **results.summary()})
        progress["imagination"].append({"round": r, **_history_tail(history)})
        progress.update(round=r, buffer=str(buffer_path), router=str(work / f"{ROUTER_STAGE}_{r}"), vlm_weight=vlm_weight)
        write_json(work / "progress.json", progress)  # the round counts as done only once this is written
        print(f"[{name}] round {r}: {results.summary()['success']}/{c.eval_episodes} successes,"
              f" return {results.returns.mean():.1f}, vlm_weight {vlm_weight:.4f}, env steps {progress['env_steps']}", flush=True)
    # Real rollouts pick what ships: the evaluated stage with the most successes, then the highest return.
    best = max(progress["evals"], key=lambda e: (e["success"], e["return_mean"]))
    progress["selected"] = best
    progress["router_params"] = load_router(Path(best["router"]), ctx.experts)[1]
    progress["router_object"] = router
    return progress


def train_model_free(ctx: Context, run_dir: Path, env_steps: int) -> dict:
    """The no-world-model ablation: REINFORCE on the router's own rollouts, with `env_steps` environment steps in all."""
    from metaworld_x.routing.learner import init_router_state, train_router
    from metaworld_x.routing.model_free import discounted_returns
    from metaworld_x.routing.rollouts import collect, router_behaviour, sampled_behaviour
    from metaworld_x.world_model.buffer import ReplayBuffer

    c = ctx.config
    config = replace(c.router, use_world_model=False)
    mean, std = ReplayBuffer.load(run_dir / "heldout.npz").obs_statistics()
    router = make_router(ctx, config, mean.size)
    state = init_router_state(router, jax.random.PRNGKey(c.seed), obs_mean=mean, obs_std=std, prior=ctx.prior)
    per_round = c.num_worlds * c.finetune_steps
    rounds = max(1, -(-env_steps // per_round))
    progress = {"env_steps": 0, "evals": [], "seconds": {"collect": 0.0, "update": 0.0, "eval": 0.0}}
    rng = np.random.default_rng(c.seed)
    for r in range(rounds):
        choices: list = []
        data = collect(make_runner(ctx, c.num_worlds), sampled_behaviour(router, state.params, ctx.text, choices),
                       jax.random.PRNGKey(c.seed + 200 + r), c.finetune_steps)
        progress["env_steps"] += per_round
        progress["seconds"]["collect"] += float(data["seconds"])
        returns = discounted_returns(data["reward"], data["done"], config.discount).reshape(-1)
        obs, choice = data["obs"].reshape(-1, mean.size), np.stack(choices).reshape(-1)
        start = time.perf_counter()
        order = rng.permutation(obs.shape[0])
        batches = [
            {"obs": obs[idx], "text": np.broadcast_to(ctx.text, (idx.size, ctx.text.size)), "prior": batch_prior(ctx, obs[idx]),
             "choice": choice[idx], "return": returns[idx]}
            for idx in np.array_split(order, max(1, obs.shape[0] // c.batch_size))
        ]
        state, _ = train_router(router, state, batches)
        progress["seconds"]["update"] += time.perf_counter() - start
        if r == rounds - 1 or r % max(1, rounds // 3) == 0:
            results = evaluate_behaviour(ctx, router_behaviour(router, state.params, ctx.text), c.seed + 10_000)
            progress["seconds"]["eval"] += results.seconds
            progress["evals"].append({"round": r, "env_steps": progress["env_steps"], **results.summary()})
            print(f"[no_world_model] round {r}: {results.summary()['success']}/{c.eval_episodes} successes,"
                  f" return {results.returns.mean():.1f}, env steps {progress['env_steps']}", flush=True)
    return progress


def fixed_expert_baseline(ctx: Context) -> dict:
    """The no-router ablation: the prior's top expert alone, no training; for a sequence, the scripted state
    machine (each sub-goal's expert alone, switched as the task reports it reached)."""
    names = ctx.experts.names
    if ctx.phase_priors is not None:
        from metaworld_x.routing.scripted import scripted_behaviour

        results = evaluate_behaviour(ctx, scripted_behaviour(ctx.scene.objective, names), ctx.config.seed + 10_000)
        return {"expert": "scripted", "env_steps": 0, "evals": [{"round": 0, "env_steps": 0, **results.summary()}]}
    best = int(np.argmax(ctx.prior))
    one_hot = np.eye(len(names), dtype=np.float32)[best]
    results = evaluate_behaviour(ctx, lambda obs, t, key: np.broadcast_to(one_hot, (obs.shape[0], len(names))), ctx.config.seed + 10_000)
    return {"expert": names[best], "env_steps": 0, "evals": [{"round": 0, "env_steps": 0, **results.summary()}]}


# ---- the whole run ---------------------------------------------------------------------


def run_pipeline(config: RouterTrainConfig, experts_dir: Path, run_dir: Path, out_dir: Path, resume: bool = False,
                 vlm_cache: Path | None = None) -> Path:
    """Train the router for `config.task` and ship it to out_dir/<task>; returns that folder.

    vlm_cache: where the prior's labels are cached (None: metaworld_x.vlm.default_cache_dir()).
    """
    from metaworld_x.world_model.checkpoint import save_world_model

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    wall = time.perf_counter()
    ctx = prepare_context(config, experts_dir, vlm_cache=vlm_cache)
    config = ctx.config  # with the settings the task calls for (a sequence's slower decay)
    task = ctx.resolution.task
    run_dir = run_dir / task.name
    context_record = json.loads(json.dumps({"task": task.name, "instruction": ctx.resolution.instruction,
                                            "experts": ctx.experts.record(), "config": dataclasses.asdict(config)}))
    previous = _read_json(run_dir / "context.json")
    if run_dir.exists() and not resume:
        shutil.rmtree(run_dir)
    elif previous is not None and (previous["experts"] != context_record["experts"] or previous["config"] != context_record["config"]):
        raise UserError(f"{run_dir} holds a run with other experts or settings; rerun without --resume to start over")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / "context.json", context_record)
    print(f"task {task.name!r} ({task.scene} scene) from {ctx.resolution.instruction!r};"
          f" experts {', '.join(ctx.experts.names)}; prior {np.round(ctx.prior, 3).tolist()} from {ctx.prior_source}"
          f" ({'on the start frame' if ctx.prior_record['frame'] else 'no image'})", flush=True)

    stages = _read_json(run_dir / "stages.json", {})
    if "collect" not in stages:
        stages["collect"] = collect_expert_data(ctx, run_dir)
        write_json(run_dir / "stages.json", stages)
    if "world_model" not in stages:
        model, wm_params, history, report = train_wm(config.world_model, run_dir / "buffer.npz", run_dir / "heldout.npz", config.wm_steps, seed=config.seed)
        save_world_model(run_dir / WM_DIR, model, wm_params, meta={"k_step": report["k_step"]})
        stages["world_model"] = {**report, "history": history}
        write_json(run_dir / "stages.json", stages)
    print("world model: k-step latent error (relative) "
          + ", ".join(f"k={k}: {v['latent_mse_relative']:.3f}" for k, v in stages["world_model"]["k_step"].items()), flush=True)

    full = train_with_world_model(ctx, run_dir, "full", config.router)
    ablations = {}
    if config.ablations:
        ablations["no_vlm"] = _strip(train_with_world_model(ctx, run_dir, "no_vlm", replace(config.router, use_vlm=False)))
        ablations["no_world_model"] = _read_json(run_dir / "no_world_model.json") or train_model_free(ctx, run_dir, full["env_steps"])
        write_json(run_dir / "no_world_model.json", ablations["no_world_model"])
        ablations["no_router"] = fixed_expert_baseline(ctx)
    return ship(ctx, run_dir, out_dir, full, stages, ablations, time.perf_counter() - wall)


def _strip(progress: dict) -> dict:
    return {k: v for k, v in progress.items() if k not in ("router_params", "router_object")}


def ship(ctx: Context, run_dir: Path, out_dir: Path, full: dict, stages: dict, ablations: dict, wall_clock: float) -> Path:
    """Write router/<task>/ as a whole: staged in a sibling folder, then swapped in by renames."""
    from metaworld_x.routing.checkpoint import save_router
    from metaworld_x.routing.curves import plot_training
    from metaworld_x.world_model.checkpoint import load_world_model, save_world_model

    task = ctx.resolution.task
    final = out_dir / task.name
    staging = out_dir / f".{task.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    model, wm_params, _ = load_world_model(Path(full["world_model"]))
    save_world_model(staging / WM_DIR, model, wm_params)
    seconds = {"collect_experts": sum(v["seconds"] for v in stages["collect"].values()),
               "world_model": stages["world_model"]["seconds"] + full["seconds"]["world_model"],
               "imagination": full["seconds"]["imagination"], "collect_router": full["seconds"]["collect"],
               "evaluation": full["seconds"]["eval"]}
    seconds["training_total"] = sum(v for k, v in seconds.items() if k != "evaluation")
    meta = {
        "task": task.name, "task_env": task.task, "scene": task.scene, "instruction": ctx.resolution.instruction,
        "success_criterion": task.success, "text_embedding": ctx.text.tolist(), "prior": ctx.prior.tolist(),
        "phase_priors": None if ctx.phase_priors is None else ctx.phase_priors.tolist(),
        "prior_source": ctx.prior_source, "prior_scorer": ctx.prior_record, "expert_observations": ctx.observation_record,
        "eval_steps": ctx.eval_steps, "vlm_weight_final": full["vlm_weight"], "selected_round": full["selected"]["round"],
    }
    save_router(staging, full["router_object"], full["router_params"], ctx.experts, meta=meta)
    metrics = {
        "task": task.name, "instruction": ctx.resolution.instruction, "scene": task.scene, "success_criterion": task.success,
        "experts": ctx.experts.record(), "prior": dict(zip(ctx.experts.names, ctx.prior.round(4).tolist())),
        "world_model": {"k_step_expert_data": stages["world_model"]["k_step"],
                        "k_step_after_finetune": full["world_model_rounds"][-1]["k_step"] if full["world_model_rounds"] else None,
                        "transitions": full["world_model_rounds"][-1]["transitions"] if full["world_model_rounds"] else stages["world_model"]["transitions"]},
        "env_steps": full["env_steps"], "seconds": seconds, "wall_clock_s": wall_clock,
        "evals": full["evals"], "final": full["evals"][-1], "selected": full["selected"],
        "ablations": {"full": {"env_steps": full["env_steps"], "evals": full["evals"]}, **ablations},
        "machine": describe_machine(),
        "config": dataclasses.asdict(ctx.config),
    }
    write_json(staging / "metrics.json", metrics)
    plot_training(staging / "curves.png", stages["world_model"]["history"], full, ablations, ctx.experts.names)
    return replace_folder(staging, final)
