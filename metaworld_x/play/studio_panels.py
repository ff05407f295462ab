"""`play`'s panel in Studio (a `ViewerPlugin`): instruction box, controls, expert weights, sub-goals, the ghost.

It draws the latest `ReportSnapshot` and sends the user's requests to the
control loop (`studio_sim.PlaySim`); it never touches the simulation itself,
so a slow frame in a browser never slows the control loop down.
"""

import copy

import mujoco
import numpy as np
from mujoco.studio import messages, plugin, sim
from mujoco.studio.dear_imgui import dear_imgui as imgui
from mujoco.studio.implot import implot

from metaworld_x.play.live_session import SPEEDS, LiveReport
from metaworld_x.play.studio_messages import GhostEvent, InstructEvent, ReportSnapshot, ShoveEvent, ToggleEvent

WINDOW_TITLE = "metaworld-x play"
WINDOW_POS = (8.0, 32.0)
"""Top left of the panel (px), below Studio's menu bar."""
WINDOW_WIDTH = 400.0
BOTTOM_MARGIN = 72.0
"""Room (px) left under the panel for Studio's status bar."""
BAR_HEIGHT = 16.0
_DOMINANT = (0.94, 0.59, 0.16, 1.0)
_BAR = (0.27, 0.55, 0.90, 1.0)
_REACHED = (0.35, 0.80, 0.40, 1.0)


def speed_label(speed: float) -> str:
    return f"x{speed:g}"


class PlayPanels(plugin.ViewerPlugin):
    """Draws the session's report and turns clicks into the control loop's messages."""

    def __init__(self):
        self.report: LiveReport | None = None
        self.draft = ""
        """What the instruction box holds (sent with Enter or the Play button)."""
        self.instruction_box: tuple[float, float, float, float] | None = None
        """Where the instruction box is on screen: (left, top, right, bottom) in pixels."""
        self._ghost = None
        self._ghost_scene = None

    @property
    def ready(self) -> bool:
        """Whether the viewer has started (and `viewer` can be read)."""
        return self._viewer is not None

    # ---- messages -------------------------------------------------------------------------

    @messages.handler
    def _on_report(self, event: ReportSnapshot) -> None:
        if self.report is None or event.report.instruction != self.report.instruction:
            self.draft = event.report.instruction
        self.report = event.report

    @messages.handler(priority=messages.Priority.INTERNAL - 1)
    def _on_post_model(self, _: messages.PostModelEvent) -> None:
        self._ghost = self._ghost_scene = None  # the ghost is drawn with the new model's geoms

    @messages.handler
    def _on_update(self, _: messages.UpdateEvent) -> None:
        report = self.report
        shown = report is not None and report.ghost_qpos is not None
        if shown and report.ghost_qpos.shape == (self.viewer.model.nq,):
            self.viewer.extra_geoms[:] = self._ghost_geoms(report.ghost_qpos, report.ghost_name)
        elif not shown and self._ghost is not None:  # hidden: take its geoms away
            self.viewer.extra_geoms.clear()
            self._ghost = self._ghost_scene = None

    def _ghost_geoms(self, qpos: np.ndarray, name: str) -> list:
        from metaworld_x.play.ghost import Ghost

        model = self.viewer.model
        if self._ghost is None:
            self._ghost = Ghost(model, None, 0.0, name)  # posed from the loop's qpos, never from a clip here
            self._ghost_scene = mujoco.MjvScene(model, maxgeom=max(model.ngeom, 1) + 8)
        ghost, scene = self._ghost, self._ghost_scene
        ghost.data.qpos[:] = qpos
        mujoco.mj_kinematics(model, ghost.data)
        scene.ngeom = 0
        ghost.draw(scene)
        return [copy.deepcopy(scene.geoms[i]) for i in range(scene.ngeom)]

    def send(self, message: messages.Message) -> None:
        self.viewer.send_to_sim(message)

    # ---- the panel ------------------------------------------------------------------------

    @messages.handler
    def _on_build_gui(self, _: messages.BuildGuiEvent) -> None:
        imgui.SetNextWindowPos(imgui.Vec2(*WINDOW_POS), int(imgui.Cond.Always))
        height = max(200.0, imgui.GetIO().DisplaySize.y - WINDOW_POS[1] - BOTTOM_MARGIN)
        imgui.SetNextWindowSize(imgui.Vec2(WINDOW_WIDTH, height), int(imgui.Cond.Always))
        flags = (int(imgui.WindowFlags.NoMove) | int(imgui.WindowFlags.NoResize) | int(imgui.WindowFlags.NoDocking)
                 | int(imgui.WindowFlags.NoCollapse))
        visible, _ = imgui.Begin(WINDOW_TITLE, None, flags)
        if visible:
            self._instruction()
            report = self.report
            if report is None:
                imgui.TextWrapped("building the scene ...")
            else:
                self._status(report)
                self._controls(report)
                self._subgoals(report)
                self._weights(report)
        imgui.End()

    def _instruction(self) -> None:
        imgui.TextUnformatted("instruction (Enter to play it)")
        imgui.SetNextItemWidth(-1.0)
        entered, self.draft = imgui.InputText("##instruction", self.draft, int(imgui.InputTextFlags.EnterReturnsTrue))
        low, high = imgui.GetItemRectMin(), imgui.GetItemRectMax()
        self.instruction_box = (low.x, low.y, high.x, high.y)
        clicked = imgui.Button("play this instruction")
        if (entered or clicked) and self.draft.strip():
            self.send(InstructEvent(self.draft))

    def _status(self, report: LiveReport) -> None:
        imgui.Separator()
        imgui.TextWrapped(report.title if report.task in report.title else f"{report.title} (task {report.task})")
        if report.routed:
            imgui.TextUnformatted(f"mixing: {report.mode}")
        imgui.TextUnformatted(f"t {report.time:5.2f} / {report.episode_seconds:.0f} s   seed {report.seed}")
        imgui.TextUnformatted(f"control {report.rate_hz:4.1f} steps/s ({report.control_hz:g} Hz x{report.speed:g})")
        success = "true" if report.success else "false"
        imgui.TextUnformatted(f"success: {success}   return: {report.episode_return:.1f}")
        if report.replanning:
            imgui.TextColored(imgui.Vec4(*_DOMINANT), "re-planning ...")
        if report.line:
            imgui.TextWrapped(report.line)

    def _controls(self, report: LiveReport) -> None:
        imgui.Separator()
        if imgui.Button("resume" if report.paused else "pause"):
            pause = sim.PauseState.UNPAUSED if report.paused else sim.PauseState.NORMAL_PAUSED
            self.send(messages.StepControlSnapshot(pause_state=pause, speed=100.0 * report.speed))
        imgui.SameLine()
        imgui.BeginDisabled(not report.paused)
        if imgui.Button("step"):
            self.send(messages.SingleStepEvent())
        imgui.EndDisabled()
        imgui.SameLine()
        if imgui.Button("reset"):
            self.send(messages.ResetEvent())
        imgui.SameLine()
        if imgui.Button("shove"):
            self.send(ShoveEvent())
        index = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - report.speed))
        changed, index = imgui.Combo("speed", index, [speed_label(s) for s in SPEEDS])
        if changed:
            pause = sim.PauseState.NORMAL_PAUSED if report.paused else sim.PauseState.UNPAUSED
            self.send(messages.StepControlSnapshot(pause_state=pause, speed=100.0 * SPEEDS[index]))
        if report.routed:
            alone = report.mode.startswith("expert ")  # "expert <name> alone"; otherwise the router or state machine
            if imgui.RadioButton(report.mode if not alone else "router", not alone) and alone:
                self.send(ToggleEvent())
            imgui.SameLine()
            if imgui.RadioButton("dominant expert alone", alone) and not alone:
                self.send(ToggleEvent())
        if report.ghost_name:
            changed, show = imgui.Checkbox(f"ghost: {report.ghost_name}", report.ghost_qpos is not None)
            if changed:
                self.send(GhostEvent(show))

    def _weights(self, report: LiveReport) -> None:
        imgui.Separator()
        names = report.expert_names
        weights = report.weights if report.weights is not None else np.zeros(len(names))
        lead = int(np.argmax(weights)) if report.weights is not None else -1
        for k, (name, weight) in enumerate(zip(names, weights)):
            imgui.PushStyleColor(imgui.Col.PlotHistogram, imgui.Vec4(*(_DOMINANT if k == lead else _BAR)))
            imgui.ProgressBar(float(weight), imgui.Vec2(-1.0, BAR_HEIGHT), f"{name} {weight:.2f}")
            imgui.PopStyleColor()
        if len(report.times) < 2:
            return
        plot_flags = int(implot.Flags.NoMenus) | int(implot.Flags.NoBoxSelect)
        if implot.BeginPlot("expert weights, last 10 s", imgui.Vec2(-1.0, 260.0), plot_flags):
            implot.SetupAxes("s", "weight", 0, 0)
            implot.SetupLegend(implot.Location.South, int(implot.LegendFlags.Outside) | int(implot.LegendFlags.Horizontal))
            t1 = float(report.times[-1])
            implot.SetupAxisLimits(implot.Axis.X1, max(0.0, t1 - 10.0), max(t1, 10.0), int(implot.Cond.Always))
            implot.SetupAxisLimits(implot.Axis.Y1, 0.0, 1.05, int(implot.Cond.Always))
            times = report.times.tolist()
            for k, name in enumerate(names):
                implot.PlotLine(name, times, report.history[:, k].tolist())
            if report.switches:
                implot.PlotStems("switch", [t for t, _ in report.switches], [1.05] * len(report.switches))
                for t, k in report.switches:
                    implot.TagX(t, imgui.Vec4(*_DOMINANT), names[k])
            implot.EndPlot()

    def _subgoals(self, report: LiveReport) -> None:
        if not report.subgoals:
            return
        imgui.Separator()
        imgui.TextUnformatted("sub-goals")
        for label, reached in report.subgoals:
            if reached:
                imgui.TextColored(imgui.Vec4(*_REACHED), f"[x] {label}")
            else:
                imgui.TextUnformatted(f"[ ] {label}")
