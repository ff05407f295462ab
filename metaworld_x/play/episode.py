"""The episode runner: one world stepped by a controller, with everything `play` shows and plots logged."""

from dataclasses import dataclass, field

import jax
import mujoco
import numpy as np

from metaworld_x.play.scenario import Scenario


@dataclass
class EpisodeLog:
    """What happened so far in one episode (appended each step)."""

    rewards: list = field(default_factory=list)
    """[T] the env's reward (sum of its scaled terms)."""
    weights: list = field(default_factory=list)
    """[T] arrays [K] of expert weights."""
    keypoint_errors: list = field(default_factory=list)
    """[T] arrays [Kp] of keypoint tracking errors (m); empty without a reference."""
    phases: list = field(default_factory=list)
    """[T] sub-goals reached so far (a sequential task's info["phase"]); empty for other tasks."""
    success: bool = False
    """The task's own success criterion held at some step (judged at the episode's end for most tasks)."""
    reason: str = "none"
    """Why the episode ended ("time_limit", "fall", ...), or "none" while it runs."""

    @property
    def steps(self) -> int:
        return len(self.rewards)

    @property
    def episode_return(self) -> float:
        return float(np.sum(self.rewards)) if self.rewards else 0.0


class EpisodeRunner:
    """Steps one world of `scenario` with its controller; `sync_data()` mirrors the world into `data` for rendering."""

    def __init__(self, scenario: Scenario, seed: int = 0):
        self.scenario = scenario
        self.env = scenario.make_env()
        self.model = self.env.compiled.model
        self.data = mujoco.MjData(self.model)
        self.control_dt = float(self.env.compiled.control_dt)
        self.episode_length = int(scenario.task.config.episode_length)
        self.reset(seed)

    def reset(self, seed: int) -> None:
        """A fresh episode drawn from `seed`: the same seed gives the same episode."""
        self.seed = seed
        self.state = self.env.reset(jax.random.PRNGKey(seed))
        self.log = EpisodeLog()
        self.last_weights = None
        self.sync_data()

    @property
    def time(self) -> float:
        """Seconds of simulated time since the reset."""
        return self.log.steps * self.control_dt

    @property
    def done(self) -> bool:
        return self.log.reason != "none"

    def step(self) -> None:
        """One control step; the episode's log grows by one entry."""
        decision = self.scenario.controller.decide(self.state)
        if decision.info is not None:
            self.state = self.state.replace(info=decision.info)
        self.state = state = self.env.step(self.state, decision.action)
        self.last_weights = decision.weights
        self.log.rewards.append(float(state.reward[0]))
        self.log.weights.append(np.asarray(decision.weights, np.float64))
        if self.scenario.keypoint_errors is not None:
            self.log.keypoint_errors.append(np.asarray(self.scenario.keypoint_errors(state))[0])
        if "phase" in state.info:
            self.log.phases.append(int(np.asarray(state.info["phase"])[0]))
        self.log.success |= bool(np.asarray(state.metrics["success"])[0] > 0.5)
        if bool(state.done[0]):
            self.log.reason = self.env.reason_names[int(np.asarray(state.info["termination_reason"])[0])]

    def sync_data(self) -> None:
        """Copy the world's physics into `data`; only when a frame is drawn, since it costs a forward pass."""
        self.env.batch.get_data(0, self.data)
        mujoco.mj_forward(self.model, self.data)
