"""The messages `play`'s Studio panels and its control loop exchange.

The panels reuse Studio's own messages for pause, speed, single step and
reset (`StepControlSnapshot`, `SingleStepEvent`, `ResetEvent`), so Studio's
built-in buttons and keys drive the same control loop. The rest are here.
"""

from dataclasses import dataclass

from mujoco.studio import messages

from metaworld_x.play.live_session import LiveReport


@dataclass(frozen=True, eq=False)
class ReportSnapshot(messages.Snapshot):
    """Control loop -> panels: the session as of its last step (latest wins)."""

    report: LiveReport


@dataclass(frozen=True)
class InstructEvent(messages.Event):
    """Panels -> control loop: play this instruction from now on."""

    text: str


@dataclass(frozen=True)
class ToggleEvent(messages.Event):
    """Panels -> control loop: switch between the router and its dominant expert alone."""


@dataclass(frozen=True)
class ShoveEvent(messages.Event):
    """Panels -> control loop: kick the robot as the `push` perturbation does."""


@dataclass(frozen=True)
class GhostEvent(messages.Event):
    """Panels -> control loop: show or hide the reference ghost."""

    show: bool
