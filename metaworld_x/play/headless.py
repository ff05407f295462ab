"""An episode rendered off-screen to video, plotted, and its outcome printed."""

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.play.episode import EpisodeLog, EpisodeRunner
from metaworld_x.play.ghost import Ghost
from metaworld_x.play.overlay import stamp, text_strip, weights_panel
from metaworld_x.play.video import VideoSink

VIDEO_FPS = 25
"""Frames per second of recorded videos; every (control rate / this)-th control step is drawn."""


@dataclass(frozen=True)
class RecordOptions:
    """How a headless episode is recorded."""

    steps: int
    """Control steps to play at most (the episode may end earlier)."""
    video: Path | None
    """.mp4 to write, or None."""
    gif: Path | None
    """.gif to write, or None."""
    plots: Path | None
    """Path stem for the PNG plots (<stem>_tracking_error.png, <stem>_weights.png), or None for no plots."""
    width: int
    """Frame width in pixels."""
    height: int
    """Frame height in pixels."""
    shadows: bool
    """Shadows and reflections: prettier, about 3x slower with software OpenGL."""
    instruction: str = ""
    """Shown in the status strip."""


class FrameRenderer:
    """Off-screen frames of the runner's world, with the ghost, the weight bars and a status strip."""

    def __init__(self, runner: EpisodeRunner, width: int, height: int, shadows: bool, ghost: Ghost | None):
        self.runner, self.ghost, self.shadows = runner, ghost, shadows
        # the off-screen buffer is sized by the model (640x480 by default); vis settings leave physics alone
        visual = runner.model.vis.global_
        visual.offwidth, visual.offheight = max(visual.offwidth, width), max(visual.offheight, height)
        try:
            self.renderer = mujoco.Renderer(runner.model, height, width)
        except Exception as error:  # no OpenGL platform: say how to get one
            raise UserError(f"cannot render off-screen ({error}); set MUJOCO_GL=egl (or osmesa) before running") from None

    def frame(self, status: list[str]) -> np.ndarray:
        """[H, W, 3] uint8 of the current state."""
        runner = self.runner
        runner.sync_data()
        self.renderer.update_scene(runner.data, camera="track")
        scene = self.renderer.scene
        scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = self.shadows
        scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = self.shadows
        if self.ghost is not None:
            self.ghost.pose(runner.time)
            self.ghost.draw(scene)
        image = self.renderer.render()
        controller = runner.scenario.controller
        if runner.last_weights is not None:
            image = stamp(image, weights_panel(controller.expert_names, runner.last_weights, controller.mode))
        return stamp(image, text_strip(status, min(image.shape[1], 520)), corner="bottom_left")

    def close(self) -> None:
        self.renderer.close()


def status_lines(runner: EpisodeRunner, instruction: str, ghost: Ghost | None) -> list[str]:
    lines = [f'"{instruction}"'] if instruction else []
    line = f"t {runner.time:5.2f} s   return {runner.log.episode_return:8.1f}"
    if ghost is not None:
        line += f"   ghost: {ghost.name}"
    return lines + [line]


def record_episode(runner: EpisodeRunner, options: RecordOptions, ghost: Ghost | None = None) -> tuple[EpisodeLog, list[Path]]:
    """Play up to `options.steps` control steps, drawing frames at VIDEO_FPS; write the video and plots."""
    every = max(1, round(1.0 / (VIDEO_FPS * runner.control_dt)))
    sink = VideoSink(1.0 / (every * runner.control_dt), options.video, options.gif)
    frames = FrameRenderer(runner, options.width, options.height, options.shadows, ghost) if (options.video or options.gif) else None
    try:
        for step in range(options.steps):
            runner.step()
            if frames is not None and (step % every == 0 or runner.done):
                sink.add(frames.frame(status_lines(runner, options.instruction, ghost)))
            if runner.done:
                break
    finally:
        if frames is not None:
            frames.close()
    written = sink.close()
    if options.plots is not None:
        written += write_plots(runner, options.plots)
    return runner.log, written


def write_plots(runner: EpisodeRunner, stem: Path) -> list[Path]:
    """Tracking error per body part (with a reference) and expert weights over time (with several experts), the
    weights marked where the dominant expert changed and where each sub-goal was reached."""
    from metaworld_x.play.plots import plot_tracking_error
    from metaworld_x.routing.curves import plot_weights
    from metaworld_x.routing.rollouts import switch_times

    log, scenario, written = runner.log, runner.scenario, []
    stem = Path(stem)
    if log.keypoint_errors:
        path = stem.with_name(f"{stem.name}_tracking_error.png")
        title = f"{scenario.title}: tracking error per body part, seed {runner.seed}, {log.steps} steps"
        written.append(plot_tracking_error(scenario.keypoint_names, np.stack(log.keypoint_errors), runner.control_dt, path, title))
    if log.weights and scenario.routed:
        path = stem.with_name(f"{stem.name}_weights.png")
        weights = np.stack(log.weights)
        goals = subgoals_of(scenario.task)
        reached = reached_times(log.phases, len(goals), runner.control_dt)
        plot_weights(path, weights[:, None, :], scenario.controller.expert_names, runner.control_dt,
                     f"{scenario.title}: expert weights, seed {runner.seed}", switches=switch_times(weights, runner.control_dt),
                     subgoals=list(zip((g.kind for g in goals), reached)))
        written.append(path)
    return written


def reached_times(phases: list[int], count: int, dt: float) -> list[float | None]:
    """Seconds (the end of the step) at which each of `count` sub-goals was first reached, from the phase after each
    step; None for one never reached."""
    return [next((t * dt for t, phase in enumerate(phases, 1) if phase > i), None) for i in range(count)]


def subgoals_of(task) -> tuple:
    """A sequential task's sub-goals (the task itself or the objective of its expert scene); () for others."""
    return getattr(task, "subgoals", None) or getattr(getattr(task, "objective", None), "subgoals", ())


def outcome_lines(runner: EpisodeRunner) -> list[str]:
    """The result as `success: true|false` and `return: <float>`, plus a note when the episode was cut short."""
    log = runner.log
    lines = [f"success: {str(log.success).lower()}", f"return: {log.episode_return:.3f}"]
    if log.keypoint_errors:
        lines.append(f"tracking error: {np.mean(log.keypoint_errors) * 100:.1f} cm (mean keypoint, relative to the root)")
    if runner.scenario.routed and log.weights:
        from metaworld_x.routing.rollouts import handover_line, switch_times

        switches = switch_times(np.stack(log.weights), runner.control_dt)
        lines.append(f"experts: {handover_line(runner.scenario.controller.expert_names, switches)}")
    ended = log.reason if log.reason != "none" else f"cut at {log.steps} of {runner.episode_length} steps"
    lines.append(f"episode: {log.steps} steps, {ended}")
    if log.reason == "none" and not log.success:
        lines.append("(success is judged when the episode ends; leave out --steps to play the whole episode)")
    return lines
