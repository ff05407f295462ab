"""The classic viewer (`play --classic`): MuJoCo's passive viewer driven by the episode runner.

Keys (MuJoCo's viewer binds every letter to a visual option, so play uses
keys it leaves free or uses for the same purpose):

    Space       pause / resume
    Backspace   reset the episode (next seed)
    -  /  =     slower / faster (halve / double the speed)
    Enter       switch between the router and its dominant expert alone

Type a new instruction in the terminal at any time; the loop picks it up
between steps. An episode that ends prints its outcome and starts the next.
"""

import os
import sys
import time
from dataclasses import dataclass

import mujoco
import numpy as np

from metaworld_x.play.episode import EpisodeRunner
from metaworld_x.play.ghost import Ghost
from metaworld_x.play.headless import outcome_lines, status_lines
from metaworld_x.play.overlay import weights_panel
from metaworld_x.play.prompt import InstructionPrompt

# GLFW key codes (mujoco.viewer passes them to key_callback)
KEY_SPACE, KEY_MINUS, KEY_EQUAL, KEY_ENTER, KEY_BACKSPACE = 32, 45, 61, 257, 259
SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0)
KEY_HELP = "keys: Space pause, Backspace reset, - slower, = faster, Enter router <-> single expert; type an instruction + Return in this terminal"


def display_problem() -> str | None:
    """Why no window can open here, or None when one can."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "no display (DISPLAY and WAYLAND_DISPLAY are unset)"
    if os.environ.get("MUJOCO_GL", "glfw").lower() in ("egl", "osmesa"):
        return f"MUJOCO_GL={os.environ['MUJOCO_GL']} selects off-screen rendering"
    return None


class ViewerUnavailable(RuntimeError):
    """The passive viewer could not open (no GLFW window, or macOS without `mjpython`)."""


@dataclass
class Controls:
    """What the keys asked for; set on the viewer's thread, read by the loop."""

    paused: bool = False
    speed_index: int = SPEEDS.index(1.0)
    reset: bool = False
    toggle: bool = False

    @property
    def speed(self) -> float:
        return SPEEDS[self.speed_index]

    def on_key(self, key: int) -> None:
        if key == KEY_SPACE:
            self.paused = not self.paused
        elif key == KEY_BACKSPACE:
            self.reset = True
        elif key == KEY_MINUS:
            self.speed_index = max(0, self.speed_index - 1)
        elif key == KEY_EQUAL:
            self.speed_index = min(len(SPEEDS) - 1, self.speed_index + 1)
        elif key == KEY_ENTER:
            self.toggle = True


def run_viewer(runner: EpisodeRunner, instruction: str, ghost: Ghost | None = None, steps: int | None = None) -> None:
    """Run episodes in the viewer until its window closes (or `steps` control steps in total)."""
    import mujoco.viewer

    controls = Controls()
    prompt = InstructionPrompt().start()
    controller = runner.scenario.controller
    try:
        # the side panels start hidden so the robot and the overlay have the window (Tab / Shift+Tab show them)
        handle = mujoco.viewer.launch_passive(runner.model, runner.data, key_callback=controls.on_key,
                                              show_left_ui=False, show_right_ui=False)
    except Exception as error:  # GLFW without a usable display, or macOS outside mjpython
        raise ViewerUnavailable(f"{type(error).__name__}: {error}") from None
    print(KEY_HELP)
    played = 0
    with handle as viewer:
        _follow_robot(viewer.cam, runner.model)
        while viewer.is_running() and (steps is None or played < steps):
            started = time.perf_counter()
            if controls.reset:
                controls.reset = False
                runner.reset(runner.seed + 1)
            if controls.toggle:
                controls.toggle = False
                print(controller.toggle())
            text = prompt.poll()
            if text is not None:
                instruction = text
                print(controller.instruct(text))
            if not controls.paused:
                runner.step()
                played += 1
                if runner.done:
                    print("\n".join(outcome_lines(runner)))
                    runner.reset(runner.seed + 1)
            with viewer.lock():
                runner.sync_data()
                viewer.user_scn.ngeom = 0
                if ghost is not None:
                    ghost.pose(runner.time)
                    ghost.draw(viewer.user_scn)
            _overlay(viewer, runner, controls, instruction, ghost)
            viewer.sync()
            time.sleep(max(0.0, runner.control_dt / controls.speed - (time.perf_counter() - started)))
    if runner.log.steps:  # the episode in progress when the window closed
        print("\n".join(outcome_lines(runner)))


def _follow_robot(camera, model) -> None:
    """A camera that tracks the pelvis from the front left; the mouse still turns and zooms it."""
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    camera.trackbodyid = model.body("pelvis").id
    camera.distance, camera.elevation, camera.azimuth = 4.0, -15.0, 135.0


def _overlay(viewer, runner: EpisodeRunner, controls: Controls, instruction: str, ghost: Ghost | None) -> None:
    controller = runner.scenario.controller
    state = "paused" if controls.paused else f"speed x{controls.speed:g}"
    lines = status_lines(runner, instruction, ghost) + [f"{controller.mode}, {state}"]
    viewer.set_texts((mujoco.mjtFontScale.mjFONTSCALE_150, mujoco.mjtGridPos.mjGRID_BOTTOMLEFT, "\n".join(lines), ""))
    if runner.last_weights is None:
        return
    panel = weights_panel(controller.expert_names, np.asarray(runner.last_weights), controller.mode)
    port = viewer.viewport
    if port is None or port.width < panel.shape[1] or port.height < panel.shape[0]:
        return
    # top right of the 3D view, which starts right of the left panel when that is shown
    left, bottom = port.left + port.width - panel.shape[1], port.bottom + port.height - panel.shape[0]
    rect = mujoco.MjrRect(left, bottom, panel.shape[1], panel.shape[0])
    viewer.set_images((rect, panel))
