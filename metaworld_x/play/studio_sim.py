"""The control loop as a Studio `SimPlugin`: the live session stepped at the control rate on the sim thread.

The physics live in the episode runner's env; after each control step the
world is copied into the `MjData` Studio shows (`EpisodeRunner.sync_data`),
and a `ReportSnapshot` goes to the panels. A rebuilt scene is published
with `ViewerHandle.set_model`, between two steps.
"""

import time

from mujoco.studio import messages, plugin, sim

from metaworld_x.play.live_session import LiveSession
from metaworld_x.play.studio_messages import GhostEvent, InstructEvent, ReportSnapshot, ShoveEvent, ToggleEvent

IDLE_SLEEP_S = 0.005
"""The longest the loop sleeps between checks for a due step or a message from the panels."""
REPORT_PERIOD_S = 0.05
"""How often at most the panels get a report while play runs (each costs the control loop a little time)."""
IDLE_REPORT_S = 0.1
"""How often the panels hear from a loop that is not stepping (paused, or waiting for the next step)."""


def publish(handle, runner) -> None:
    """Show `runner`'s scene in Studio, its camera following the robot (the model's "track" camera)."""
    model = runner.model
    if "track" in {model.camera(i).name for i in range(model.ncam)}:
        model.vis.global_.cameraid = model.camera("track").id  # Studio aligns its camera to this one
    runner.sync_data()
    handle.set_model(model, data=runner.data)


class PlaySim(plugin.SimPlugin):
    """Steps a `LiveSession` when a step is due and answers the panels' requests."""

    def __init__(self, session: LiveSession):
        self.session = session
        self._reported = 0.0

    # ---- the loop -------------------------------------------------------------------------

    @messages.handler
    def _on_load_model(self, _: messages.LoadModelEvent) -> bool:
        """The scene is built in Python: (re)publish it rather than read a file."""
        publish(self.handle, self.session.runner)
        return True

    @messages.handler
    def _on_pre_step(self, _: messages.PreStepEvent) -> None:
        session = self.session
        if session.poll_replan() or session.model_changed:
            session.model_changed = False
            publish(self.handle, session.runner)
            self._report()

    @messages.handler
    def _on_step(self, _: messages.StepEvent) -> None:
        session = self.session
        since = time.monotonic() - self._reported
        if session.tick():
            session.runner.sync_data()
            if since > REPORT_PERIOD_S:
                self._report()
        elif since > IDLE_REPORT_S:
            self._report()
        # sleep, never spin: the viewer threads need the GIL to draw
        time.sleep(min(max(session.wait(), 0.0005), IDLE_SLEEP_S))

    def _report(self) -> None:
        self._reported = time.monotonic()
        self.handle.send_to_viewer(ReportSnapshot(self.session.report()))

    def _step_control(self) -> None:
        """Tell the viewer (Studio's own step controls too) the pause state and speed now in force."""
        session = self.session
        pause = sim.PauseState.NORMAL_PAUSED if session.paused else sim.PauseState.UNPAUSED
        self.handle.send_to_viewer(messages.StepControlSnapshot(pause_state=pause, speed=100.0 * session.speed))

    # ---- what the panels (and Studio's own controls) ask for ------------------------------

    @messages.handler
    def _on_step_control(self, event: messages.StepControlSnapshot) -> bool:
        self.session.set_paused(event.pause_state != sim.PauseState.UNPAUSED)
        if event.speed > 0:
            self.session.set_speed(event.speed / 100.0)
        self._step_control()
        self._report()
        return True

    @messages.handler
    def _on_pause(self, event: messages.RequestPauseEvent) -> bool:
        self.session.set_paused(event.pause_state != sim.PauseState.UNPAUSED)
        self._step_control()
        self._report()
        return True

    @messages.handler
    def _on_single_step(self, _: messages.SingleStepEvent) -> bool:
        if self.session.paused:
            self.session.step()
            self.session.runner.sync_data()
        self._report()
        return True

    @messages.handler
    def _on_reset(self, _: messages.ResetEvent) -> bool:
        self.session.reset()
        self.session.runner.sync_data()
        self._report()
        return True  # the runner's reset, not a reset of the displayed MjData alone

    @messages.handler
    def _on_instruct(self, event: InstructEvent) -> None:
        self.session.instruct(event.text)
        self._report()

    @messages.handler
    def _on_toggle(self, _: ToggleEvent) -> None:
        self.session.toggle()
        self._report()

    @messages.handler
    def _on_shove(self, _: ShoveEvent) -> None:
        self.session.shove()
        self._report()

    @messages.handler
    def _on_ghost(self, event: GhostEvent) -> None:
        self.session.show_ghost = event.show
        self._report()
