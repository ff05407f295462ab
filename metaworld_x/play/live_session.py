"""A live play session: the episode runner stepped at the control rate, paused, shoved and re-instructed.

Everything a viewer shows goes out as one `LiveReport`; everything a viewer
asks for comes in as a method call (`instruct`, `toggle`, `reset`, `shove`,
...). Nothing here imports a viewer, so the logic is tested without one.

A new instruction is re-planned off the control loop's thread
(`Replanner`): an instruction for the task being played re-instructs its
controller; one for another task builds that task's scene and controller,
compiled before they replace the old ones between two control steps.
"""

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.play.episode import EpisodeRunner
from metaworld_x.play.weights_history import WeightsHistory

SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0)
"""Play speeds offered, as multiples of real time."""
MAX_LAG_S = 0.1
"""A loop this far behind its schedule (s) drops the lag instead of racing to catch up."""
SUBGOAL_PREFIX = "subgoal/"


# ---- sub-goals ----------------------------------------------------------------------------


def subgoal_names(task) -> tuple[str, ...]:
    """The task's sub-goal metrics without their prefix (`approach`, or `0`, `1` in a sequence), in task order."""
    return tuple(n[len(SUBGOAL_PREFIX):] for n in getattr(task, "metric_names", ()) if n.startswith(SUBGOAL_PREFIX))


def subgoal_labels(task) -> tuple[str, ...]:
    """What each sub-goal is called on screen: a sequence's clause ("walk to the chair"), else its metric name."""
    goals = getattr(getattr(task, "objective", task), "subgoals", ())
    return tuple(goals[int(n)].clause if n.isdigit() and int(n) < len(goals) else n for n in subgoal_names(task))


def tick_subgoals(reached: tuple[bool, ...], names: tuple[str, ...], metrics: dict) -> tuple[bool, ...]:
    """`reached` with every sub-goal whose metric holds in this step's `metrics` ticked; a tick stays for the episode."""
    return tuple(bool(was or np.asarray(metrics[SUBGOAL_PREFIX + name]).reshape(-1)[0] > 0.5)
                 for was, name in zip(reached, names))


def warm_up(runner: EpisodeRunner) -> None:
    """Compile the runner's controller and env with one step, then restart its episode from the same seed, so the
    first step in play does not stall the control loop."""
    runner.step()
    runner.reset(runner.seed)


def task_name(scenario) -> str:
    """The task a scenario plays: the router's task, or the expert's title."""
    return getattr(scenario.controller, "task", scenario.title)


# ---- pacing -------------------------------------------------------------------------------


class Pacer:
    """Says when the next control step is due: one per control_dt / speed seconds of wall-clock time."""

    def __init__(self, control_dt: float):
        self.control_dt = control_dt
        self._next: float | None = None

    def due(self, now: float, speed: float) -> bool:
        """Whether a step is due at `now` (s, monotonic); a True books the next one."""
        if self._next is None or now - self._next > MAX_LAG_S:
            self._next = now
        if now < self._next:
            return False
        self._next += self.control_dt / speed
        return True

    def wait(self, now: float) -> float:
        """Seconds until the next step is due (0 when it is)."""
        return 0.0 if self._next is None else max(0.0, self._next - now)

    def restart(self) -> None:
        """Forget the schedule (after a pause, so play resumes without a burst)."""
        self._next = None


class RateMeter:
    """Control steps per second of wall-clock time, over the last second."""

    def __init__(self, window_s: float = 1.0):
        self.window_s = window_s
        self._stamps: deque = deque()

    def tick(self, now: float) -> None:
        self._stamps.append(now)
        while self._stamps and now - self._stamps[0] > self.window_s:
            self._stamps.popleft()

    def rate(self, now: float) -> float:
        """Steps per second lately; 0 when nothing stepped within the window."""
        if len(self._stamps) < 2 or now - self._stamps[-1] > self.window_s:
            return 0.0
        return (len(self._stamps) - 1) / max(self._stamps[-1] - self._stamps[0], 1e-9)


# ---- re-planning --------------------------------------------------------------------------


@dataclass(frozen=True)
class Replan:
    """What a new instruction became."""

    instruction: str
    line: str
    """For the user: what happened, or why nothing did."""
    runner: EpisodeRunner | None = None
    """The new task's runner, when the instruction asked for another task; None: the controller was re-instructed."""
    ghost: object | None = None
    """The reference ghost posed in the new scene (when play shows one)."""
    accepted: bool = True
    """False when the instruction was refused (the session keeps its instruction)."""


class Replanner:
    """Re-plans instructions on a worker thread, one at a time; `poll()` hands over the finished one."""

    def __init__(self, task_of: Callable[[str], str] | None, build: Callable[[str], object] | None,
                 ghost_for: Callable[[object], object] | None = None):
        """task_of: instruction -> task name (None: every instruction re-instructs the controller);
        build: instruction -> Scenario of its task; ghost_for: model -> Ghost for a rebuilt scene."""
        self.task_of, self.build, self.ghost_for = task_of, build, ghost_for
        self._thread: threading.Thread | None = None
        self._done: Replan | None = None

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def submit(self, text: str, runner: EpisodeRunner) -> bool:
        """Start re-planning `text` against the `runner` in play; False while another one is still running."""
        if self.busy:
            return False
        self._thread = threading.Thread(target=self._run, args=(text, runner), name="replan", daemon=True)
        self._thread.start()
        return True

    def poll(self) -> Replan | None:
        """The finished re-plan, once."""
        done, self._done = self._done, None
        return done

    def wait(self, timeout: float | None = None) -> Replan | None:
        """Block until the running re-plan has finished, then `poll()`."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.poll()

    def _run(self, text: str, runner: EpisodeRunner) -> None:
        try:
            self._done = self.replan(text, runner)
        except UserError as error:
            self._done = Replan(text, f"not re-planned: {error}", accepted=False)
        except Exception as error:  # a failed re-plan must not end the session in play
            self._done = Replan(text, f"not re-planned: {type(error).__name__}: {error}", accepted=False)

    def replan(self, text: str, runner: EpisodeRunner) -> Replan:
        """Re-instruct the controller (same task) or build the task's scene (another task); on this thread."""
        text = text.strip()
        if not text:
            return Replan(text, "the instruction is empty: say what to do", accepted=False)
        current = task_name(runner.scenario)
        task = self.task_of(text) if self.task_of is not None else current
        if task == current:
            return Replan(text, runner.scenario.controller.instruct(text))
        scenario = self.build(text)
        new = EpisodeRunner(scenario, seed=runner.seed)
        warm_up(new)  # compiled here, so the swap never stalls the control loop
        ghost = self.ghost_for(new.model) if self.ghost_for is not None else None
        return Replan(text, f"new scene: {scenario.title} ({new.episode_length} steps per episode)", new, ghost)


# ---- the session --------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveReport:
    """Everything the panels show, as of one control step."""

    title: str
    """The scenario, e.g. "router fetch" or "expert walk"."""
    task: str
    instruction: str
    mode: str
    """"router" (or "scripted state machine"), or "expert <name> alone"."""
    routed: bool
    """Whether the router mixes several experts (and the router/dominant-expert switch applies)."""
    expert_names: tuple[str, ...]
    weights: np.ndarray | None
    """[K] weights of the last step; None before the first."""
    times: np.ndarray
    """[T] seconds into the episode of the weights history."""
    history: np.ndarray
    """[T, K] the weights of the last seconds."""
    switches: tuple[tuple[float, int], ...]
    """(time s, expert index) where the dominant expert changed, inside the history."""
    subgoals: tuple[tuple[str, bool], ...]
    """(label, reached) of each sub-goal, in task order."""
    success: bool
    episode_return: float
    time: float
    """Seconds into the episode."""
    episode_seconds: float
    seed: int
    paused: bool
    speed: float
    rate_hz: float
    """Control steps per second of wall-clock time lately."""
    control_hz: float
    """The control rate the policy runs at (steps per simulated second)."""
    replanning: bool
    line: str
    """The last message for the user."""
    ghost_qpos: np.ndarray | None = None
    """The reference ghost's pose (qpos), when one is shown."""
    ghost_name: str = ""


class LiveSession:
    """The state of one live `play`: a runner, the controls a viewer offers, and what it reports."""

    def __init__(self, runner: EpisodeRunner, instruction: str, replanner: Replanner | None = None, ghost=None,
                 steps: int | None = None, announce: Callable[[str], None] = print, clock=time.monotonic):
        self.instruction, self.replanner, self.steps = instruction, replanner, steps
        self.announce, self.clock = announce, clock
        self.paused, self.speed, self.show_ghost = False, 1.0, ghost is not None
        self.line, self.played, self.shoves = "", 0, 0
        self.model_changed = False
        """Set when a rebuilt scene replaced the model; the viewer glue publishes it and clears this."""
        self._rate = RateMeter()
        self._install(runner, ghost)

    def _install(self, runner: EpisodeRunner, ghost) -> None:
        self.runner, self.ghost = runner, ghost
        self.pacer = Pacer(runner.control_dt)
        self.history = WeightsHistory(len(runner.scenario.controller.expert_names), runner.control_dt)
        self._names, self._labels = subgoal_names(runner.scenario.task), subgoal_labels(runner.scenario.task)
        self.reached = (False,) * len(self._names)

    @property
    def finished(self) -> bool:
        """Whether the `steps` asked for have been played."""
        return self.steps is not None and self.played >= self.steps

    # ---- what a viewer asks for -----------------------------------------------------------

    def instruct(self, text: str) -> None:
        """Re-plan for `text`, off this thread; `poll_replan` applies the result."""
        if self.replanner is None:
            self.line = self.runner.scenario.controller.instruct(text)
        elif not self.replanner.submit(text, self.runner):
            self.line = "still re-planning the last instruction; try again when it is done"
        else:
            self.line = f're-planning for "{text.strip()}" ...'
        self.announce(self.line)

    def toggle(self) -> None:
        """Switch between the router and its dominant expert alone."""
        self.line = self.runner.scenario.controller.toggle()
        self.announce(self.line)

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self.pacer.restart()

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.speed = float(speed)
        self.pacer.restart()

    def reset(self) -> None:
        """A new episode from the next seed."""
        self.runner.reset(self.runner.seed + 1)
        self.history.clear()
        self.reached = (False,) * len(self._names)
        self.pacer.restart()

    def shove(self) -> None:
        """Kick the robot's root sideways as the `push` perturbation suite does (a random direction and speed)."""
        import jax

        from metaworld_x.envs.perturb import SUITES
        from metaworld_x.envs.randomize import horizontal_kick

        low, high = SUITES["push"].push_speed
        key = jax.random.fold_in(jax.random.PRNGKey(self.runner.seed), self.shoves)
        self.shoves += 1
        kick = np.asarray(horizontal_kick(key, low, high), np.float64)
        runner = self.runner
        runner.state = runner.env.add_root_velocity(runner.state, kick[None])
        self.line = f"shoved: {np.linalg.norm(kick):.2f} m/s towards {np.degrees(np.arctan2(kick[1], kick[0])):.0f} deg"
        self.announce(self.line)

    # ---- the control loop -----------------------------------------------------------------

    def poll_replan(self) -> bool:
        """Apply a finished re-plan; True when it brought a new scene (a new model to publish)."""
        done = self.replanner.poll() if self.replanner is not None else None
        if done is None:
            return False
        self.line = done.line
        self.announce(done.line)
        if not done.accepted:
            return False
        self.instruction = done.instruction
        if done.runner is None:
            return False
        self._install(done.runner, done.ghost)
        self.model_changed = True
        return True

    def tick(self) -> bool:
        """Step once if a step is due now (and play is not paused); True when it stepped."""
        now = self.clock()
        if self.paused or self.finished or not self.pacer.due(now, self.speed):
            return False
        self.step()
        self._rate.tick(now)
        return True

    def step(self) -> None:
        """One control step, logged; an episode that ends prints its outcome and the next begins."""
        from metaworld_x.play.headless import outcome_lines

        runner = self.runner
        runner.step()
        self.played += 1
        self.history.push(runner.time, runner.last_weights)
        self.reached = tick_subgoals(self.reached, self._names, runner.state.metrics)
        if runner.done:
            self.announce("\n".join(outcome_lines(runner)))
            self.reset()

    def wait(self) -> float:
        """Seconds until the next step is due."""
        return self.pacer.wait(self.clock())

    # ---- what a viewer shows --------------------------------------------------------------

    def report(self) -> LiveReport:
        runner, controller = self.runner, self.runner.scenario.controller
        times, history = self.history.window()
        ghost_qpos = None
        if self.ghost is not None and self.show_ghost:
            self.ghost.pose(runner.time)
            ghost_qpos = self.ghost.data.qpos.copy()
        return LiveReport(
            title=runner.scenario.title, task=task_name(runner.scenario), instruction=self.instruction,
            mode=controller.mode, routed=runner.scenario.routed, expert_names=tuple(controller.expert_names),
            weights=None if runner.last_weights is None else np.array(runner.last_weights, np.float64),
            times=times, history=history, switches=tuple(self.history.switch_marks()),
            subgoals=tuple(zip(self._labels, self.reached)), success=runner.log.success,
            episode_return=runner.log.episode_return, time=runner.time,
            episode_seconds=runner.episode_length * runner.control_dt, seed=runner.seed, paused=self.paused,
            speed=self.speed, rate_hz=self._rate.rate(self.clock()), control_hz=1.0 / runner.control_dt,
            replanning=self.replanner is not None and self.replanner.busy, line=self.line, ghost_qpos=ghost_qpos,
            ghost_name=getattr(self.ghost, "name", ""),
        )
