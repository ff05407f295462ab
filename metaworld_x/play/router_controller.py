"""The router path of `play`: an instruction, the shipped router for its task, every installed expert mixed.

The one router of all tasks lives in router/all/ (`metaworld-x train router --all`) and is played wherever it is
shipped; otherwise the router for a task lives in router/<task>/ (`metaworld-x train router`);
it is refused unless the installed experts are exactly the ones it was
trained with (`metaworld_x.routing.checkpoint.load_router`). The scene is the
task's `ExpertScene`, whose observation carries each expert's own
observation ("expert/<name>") next to the router's ("state").
"""

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.json_file import read_json_object
from metaworld_x.play.scenario import Decision, Scenario, train_expert_command


def train_router_command(task: str) -> str:
    return f"metaworld-x train router --task {task}"


class RouterController:
    """Soft weights from the router (or the scripted state machine), Σ_k w_k·g_k·a_k executed (g_k:
    ExpertScene.action_gains); Enter switches to the dominant expert alone and back."""

    def __init__(self, choose_weights, text: np.ndarray, experts, task: str, resolver_factory, action_gains,
                 clocks: tuple | None = None, label: str = "router"):
        """choose_weights: (state [1, obs], text [1, D]) -> weights [1, K], a jax function (the router's
        `weights` with its parameters, or `scripted.scripted_weights`). clocks: each expert's start time, when the
        scene restarts an expert's clock as it takes over (`ExpertScene.restart_clocks`); None: the clocks run
        from the episode's start. label: what the weights come from, the controller's `mode` unless one expert
        plays alone ("expert <name> alone")."""
        from metaworld_x.routing.network import mixture_action
        from metaworld_x.routing.rollouts import expert_actions, take_over

        self.expert_names = tuple(experts.names)
        self.task, self.mode, self.label = task, label, label
        self._text = jnp.asarray(text, jnp.float32)[None]
        self._resolver_factory, self._resolver = resolver_factory, None
        self._alone: int | None = None
        self._last = np.full(len(self.expert_names), 1.0 / len(self.expert_names))
        params_k = tuple(experts.params)
        names = self.expert_names
        gains = jnp.asarray(action_gains, jnp.float32)  # each expert's action in the scene's units

        @jax.jit
        def decide(obs, info, previous, text, alone_mask, alone):
            weights = choose_weights(obs["state"], text)  # [1, K]
            weights = jnp.where(alone, alone_mask[None], weights)
            if clocks is None:
                expert_obs, dominant = tuple(obs[f"expert/{n}"] for n in names), jnp.argmax(weights, axis=-1)
            else:
                info, expert_obs, dominant = take_over(names, clocks, info, obs, previous, weights)
            actions = expert_actions(params_k, expert_obs, gains)  # [1, K, A]
            return mixture_action(weights, actions), weights[0], info, dominant

        self._decide = decide
        self._clocks = clocks
        self._dominant = jnp.full((1,), -1)

    def decide(self, state) -> Decision:
        alone = self._alone is not None
        mask = jnp.zeros(len(self.expert_names)).at[self._alone or 0].set(1.0)
        if int(np.asarray(state.info["step"])[0]) == 0:  # a fresh episode: no expert has taken over yet
            self._dominant = jnp.full((1,), -1)
        action, weights, info, self._dominant = self._decide(state.obs, state.info, self._dominant, self._text, mask, alone)
        self._last = np.asarray(weights)
        return Decision(np.asarray(action), self._last, info if self._clocks is not None else None)

    def toggle(self) -> str:
        if self._alone is None:
            self._alone = int(np.argmax(self._last))
            self.mode = f"expert {self.expert_names[self._alone]} alone"
            return (f"single expert: {self.expert_names[self._alone]} (the {self.label}'s dominant one); Enter switches"
                    " back")
        self._alone, self.mode = None, self.label
        return f"{self.label}: choosing the experts again"

    def instruct(self, text: str) -> str:
        if self._resolver is None:
            self._resolver = self._resolver_factory()
        resolution = self._resolver.resolve(text)
        if resolution.task.name != self.task:
            return (f"{text!r} asks for task {resolution.task.name!r}, but this scene is {self.task!r}'s;"
                    f' restart with metaworld-x play "{text}" to build its scene')
        self._text = jnp.asarray(self._resolver.embed([text])[0], jnp.float32)[None]
        return f"{self.label} now follows {text!r} (task {self.task})"


def _shipped(router_root: Path) -> dict[str, dict]:
    """{task: router.json record} of every per-task router under router_root."""
    from metaworld_x.routing.all_tasks import ALL_TASKS_DIR

    return {p.parent.name: read_json_object(p, "the router record") for p in sorted(Path(router_root).glob("*/router.json"))
            if p.parent.name != ALL_TASKS_DIR}


def router_scenario_from_checkpoint(instruction: str, router_root: Path, experts_dir: Path) -> Scenario:
    """The scenario of the router for `instruction`'s task; UserErrors name the command that trains what is missing."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing.checkpoint import load_router
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.routing.scene import build_expert_scene

    from metaworld_x.routing.all_tasks import ALL_TASKS_DIR

    if (Path(router_root) / ALL_TASKS_DIR / "router.json").is_file():
        return _one_router_scenario(instruction, Path(router_root) / ALL_TASKS_DIR, experts_dir)
    shipped = _shipped(router_root)
    resolver = None
    # the wording a router was trained with needs no text encoder: its embedding is in router.json
    task = next((name for name, record in shipped.items() if record.get("instruction") == instruction), None)
    if task is None:
        resolver = TaskResolver()
        task = resolver.resolve(instruction).task.name
    if task not in shipped:
        raise UserError(
            f"no trained router for task {task!r} (from {instruction!r}) in {router_root}; train it with"
            f" `{train_router_command(task)}`" + (f" (shipped: {', '.join(shipped)})" if shipped else "")
        )
    record = shipped[task]
    folder = Path(router_root) / task
    installed = {p.parent.name: p.parent for p in sorted(Path(experts_dir).glob("*/policy.json"))}
    missing = [e["name"] for e in record["experts"] if e["name"] not in installed]
    installed = {e["name"]: installed[e["name"]] for e in record["experts"] if e["name"] in installed}  # its own set
    if missing:
        raise UserError(
            f"the router in {folder} needs expert(s) {', '.join(missing)}, missing from {experts_dir};"
            f" train them with `{train_expert_command(missing[0])}`" + (" (and the others alike)" if len(missing) > 1 else "")
        )
    experts = ExpertSet.load(installed)
    router, params, record = load_router(folder, experts)
    scene, _ = build_expert_scene(make_task(record["task_env"]), installed, dict(zip(experts.names, experts.specs)))
    if instruction == record["instruction"]:
        text = np.asarray(record["text_embedding"], np.float32)
    else:
        text = resolver.embed([instruction])[0].astype(np.float32)
    factory = (lambda: resolver) if resolver is not None else TaskResolver
    return Scenario(
        title=f"router {task}",
        task=scene,
        controller=RouterController(functools.partial(router.weights, params), text, experts, task, factory,
                                    scene.action_gains, scene.start_times if scene.restart_clocks else None),
        reference=None,
        keypoint_errors=None,
        routed=True,
    )


def _one_router_scenario(instruction: str, folder: Path, experts_dir: Path) -> Scenario:
    """The one router of all tasks (router/all/) on `instruction`'s task, in that task's padded scene."""
    from metaworld_x.envs.tasks import make_task
    from metaworld_x.routing.all_tasks import task_view
    from metaworld_x.routing.checkpoint import load_router, trained_experts
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.routing.scene import build_expert_scene

    record = read_json_object(folder / "router.json", "the router record")
    resolver = None
    # a task's own wording needs no text encoder: its embedding is in router.json
    task = next((name for name, entry in record["tasks"].items() if entry["instruction"] == instruction), None)
    if task is None:
        resolver = TaskResolver()
        task = resolver.resolve(instruction).task.name
    dirs = trained_experts(folder, experts_dir)
    experts = ExpertSet.load(dirs)
    router, params, record = load_router(folder, experts)
    view = task_view(record, task, folder)
    scene, _ = build_expert_scene(make_task(view["task_env"]), dirs, dict(zip(experts.names, experts.specs)),
                                  state_features=view["state_features"])
    if instruction == view["instruction"]:
        text = np.asarray(view["text_embedding"], np.float32)
    else:
        text = resolver.embed([instruction])[0].astype(np.float32)
    factory = (lambda: resolver) if resolver is not None else TaskResolver
    return Scenario(
        title=f"router {task}",
        task=scene,
        controller=RouterController(functools.partial(router.weights, params), text, experts, task, factory,
                                    scene.action_gains, scene.start_times if scene.restart_clocks else None),
        reference=None,
        keypoint_errors=None,
        routed=True,
    )


def scripted_scenario(instruction: str, experts_dir: Path) -> Scenario:
    """The scripted state machine on `instruction`'s sequence (a catalog task, or composed from its clauses): each
    sub-goal's expert alone, switched as the task reports the sub-goal reached. No router is read."""
    from metaworld_x.envs.tasks import TASKS
    from metaworld_x.experts.installed import ExpertSet, installed_experts
    from metaworld_x.routing.instructions import SkillMatcher, compose
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.routing.scene import build_expert_scene
    from metaworld_x.routing.scripted import scripted_weights

    resolver = TaskResolver()
    entry = resolver.sequence(instruction)
    task = (TASKS[entry.task] if entry is not None else compose(instruction, SkillMatcher(resolver.encoder)))()
    dirs = installed_experts(experts_dir)
    experts = ExpertSet.load(dirs)
    choose = scripted_weights(task, experts.names)  # names a missing expert before the scene is built
    scene, _ = build_expert_scene(task, dirs, dict(zip(experts.names, experts.specs)))
    text = resolver.embed([instruction])[0].astype(np.float32)
    return Scenario(
        title=f"scripted {task.name}",
        task=scene,
        controller=RouterController(choose, text, experts, task.name, lambda: resolver, scene.action_gains,
                                    scene.start_times, label="scripted state machine"),
        reference=None,
        keypoint_errors=None,
        routed=True,
    )
