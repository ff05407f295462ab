"""What `play` runs: a task to simulate and a controller that chooses the actions.

Two scenarios:
- `expert_scenario(skill)`: one shipped expert in its own tracking task
  (the scene and reference clip it was trained on), starting at the clip's
  first frame so a ghost of the same clip moves in step with it;
- `router_scenario(instruction)`: the instruction matched to a composite
  task, the shipped router for it mixing every installed expert.

A missing artifact is a `UserError` that names the command which makes it.
"""

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

import jax
import numpy as np

from metaworld_x.errors import UserError

TRAIN_ROUTER = "metaworld-x train router"


def train_expert_command(skill: str) -> str:
    return f"metaworld-x train expert {skill}"


@dataclass(frozen=True)
class Decision:
    """One control step's choice."""

    action: np.ndarray
    """[1, A] the executed action of the one world."""
    weights: np.ndarray
    """[K] weight of each expert in `Controller.expert_names` (sum to 1)."""
    info: dict | None = None
    """The state's info to step from, when the controller changed it (an expert taking over restarts its clock)."""


class Controller(Protocol):
    expert_names: tuple[str, ...]
    mode: str

    def decide(self, state) -> Decision: ...

    def toggle(self) -> str:
        """Switch between the router and its dominant expert alone; returns a line for the user."""

    def instruct(self, text: str) -> str:
        """Take a new instruction; returns a line for the user."""


@dataclass(frozen=True)
class Scenario:
    """A task, its controller and what is known about tracking in it."""

    title: str
    """For the overlay and the printed header, e.g. "expert walk"."""
    task: object
    """The env task (metaworld_x.envs.task.Task) played, one world on the cpu backend."""
    controller: Controller
    reference: object | None
    """The ReferenceMotion the robot tracks (for the ghost and the tracking plot), or None."""
    keypoint_errors: Callable | None
    """State -> [1, K] distance (m) of each keypoint from its reference, or None without a reference."""
    routed: bool = False
    """Whether the router mixes the experts (then the weights over time are worth a plot)."""

    @property
    def keypoint_names(self) -> tuple[str, ...]:
        return self.reference.keypoint_names if self.reference is not None else ()

    def make_env(self):
        from metaworld_x.experts.environment import make_env

        # one world on one thread: a viewer shows one robot, and the render
        # wants the other core
        return make_env(self.task, 1, "cpu", nthread=1, auto_reset=False)


# ---- one expert -------------------------------------------------------------------------


class ExpertController:
    """One expert acting alone on its own tracking observation; the overlay shows its weight as 1."""

    def __init__(self, skill: str, params, shown: tuple[str, ...]):
        from metaworld_x.experts.policy import act

        self.skill, self.mode = skill, f"expert {skill}"
        self.expert_names = shown
        self._weights = np.asarray([float(name == skill) for name in shown])
        self._obs_size = int(params.obs_mean.shape[0])
        self._policy = jax.jit(functools.partial(act, params))

    def decide(self, state) -> Decision:
        obs = state.obs["state"]
        if obs.shape[-1] != self._obs_size:
            raise UserError(
                f"expert {self.skill!r} reads {self._obs_size} observation entries but its task now gives {obs.shape[-1]};"
                f" its recipe changed after it was trained: retrain it with `{train_expert_command(self.skill)}`"
            )
        return Decision(np.asarray(self._policy(obs)), self._weights)

    def toggle(self) -> str:
        return f"no router in this run (single expert {self.skill!r}); play an instruction without --expert to use it"

    def instruct(self, text: str) -> str:
        return f"instruction noted: {text!r}; a single expert ignores instructions (the router follows them)"


def expert_scenario(skill: str, experts_dir: Path) -> Scenario:
    """Expert `skill` from `experts_dir/skill` in its own tracking task."""
    from metaworld_x.experts.environment import expert_task
    from metaworld_x.experts.specs import EXPERTS, installed_spec
    from metaworld_x.experts.policy import load_policy
    from metaworld_x.experts.installed import installed_experts
    from metaworld_x.routing.scene import load_expert_spec

    directory = Path(experts_dir) / skill
    own = installed_spec(skill, directory)  # unknown skill: a UserError listing the known ones
    if not (directory / "policy.json").is_file():
        raise UserError(f"no trained expert {skill!r} in {directory}; train it with `{train_expert_command(skill)}`")
    params, _ = load_policy(directory)
    # the recipe it was trained with (its spec.json), not today's; an own motion's clip from its folder
    spec = load_expert_spec(directory)[0] if skill in EXPERTS else own
    # every play starts at the clip's first frame: repeatable, and in step with a ghost of the same clip
    spec = dataclasses.replace(spec, tracking={**spec.tracking, "phase_zero_fraction": 1.0})
    task = expert_task(spec)
    shown = tuple(installed_experts(experts_dir))  # skill is among them: its policy.json is checked above
    errors = jax.jit(jax.vmap(lambda view, info: task.keypoint_errors(view, info)))
    return Scenario(
        title=f"expert {skill}",
        task=task,
        controller=ExpertController(skill, params, shown),
        reference=task.reference,
        keypoint_errors=lambda state: errors(state.data.view, state.info),
    )


# ---- the router -------------------------------------------------------------------------


def router_scenario(instruction: str, router_dir: Path, experts_dir: Path) -> Scenario:
    """The instruction's composite task, played by the shipped router over the installed experts."""
    if not any(Path(router_dir).glob("*/router.json")):
        raise UserError(
            f"no trained router in {router_dir}; train it with `{TRAIN_ROUTER}`"
            f" (or play one expert: --expert {_first_installed_expert(experts_dir)})"
        )
    from metaworld_x.play.router_controller import router_scenario_from_checkpoint

    return router_scenario_from_checkpoint(instruction, Path(router_dir), Path(experts_dir))


def _first_installed_expert(experts_dir: Path) -> str:
    """The first installed expert by name, or walk (the first to train) when there is none."""
    from metaworld_x.experts.installed import installed_experts

    try:
        return next(iter(installed_experts(experts_dir)))
    except UserError:
        return "walk"
