"""`metaworld-x play "INSTRUCTION"`: watch the controller, or record it headless."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from metaworld_x.errors import UserError

DEFAULT_INSTRUCTION = "walk to the box, pick it up and carry it to the table"
"""What `metaworld-x play` plays when given no instruction: the flagship task (fetch's canonical instruction in
metaworld_x.routing.language.CATALOG, whose shipped router it finds by exact match)."""


@dataclass(frozen=True)
class Play:
    """Play an instruction with the shipped router and experts (or one expert), in the viewer or to a video.

    Without an instruction it plays the flagship task, fetch (the instruction's default below).

    With a display and neither --video nor --gif, MuJoCo Studio's viewer opens, with a panel to re-instruct the
    robot, pause, shove it and watch the expert weights. --web serves the same viewer to a browser instead (no
    display needed) and prints its URL. Otherwise the episode is rendered off-screen. Each episode's outcome is
    printed as `success: true|false` and `return: <float>`.
    """

    instruction: tyro.conf.Positional[Annotated[str | None, tyro.conf.arg(metavar="[INSTRUCTION]")]] = None
    """What the robot should do, in plain language (the router maps it to a task); default: "walk to the box, pick
    it up and carry it to the table" (none with --expert)."""
    expert: str | None = None
    """Play this one expert in its own tracking scene instead of the router (e.g. walk)."""
    scripted: bool = False
    """Play a sequential instruction with the scripted state machine (each sub-goal's expert alone, switched as the
    task reports it reached), the baseline a router must beat, instead of the router; needs no trained router."""
    motion: str | None = None
    """Also play this reference clip kinematically, as a translucent ghost beside the robot (e.g. walk)."""
    motion_offset: float = 1.0
    """How far (m) to the robot's left the ghost walks; 0 puts it on top of the robot."""
    video: Path | None = None
    """Record an .mp4 (headless; no viewer opens)."""
    gif: Path | None = None
    """Record a .gif (headless; no viewer opens)."""
    seed: int = 0
    """Seed of the episode: the same seed plays the same episode."""
    steps: int | None = None
    """Control steps to play (50 per second); default: one whole episode."""
    headless: bool = False
    """Never open a window, even with a display."""
    web: bool = False
    """Serve the viewer to a browser instead of opening a window (works without a display); prints the URL."""
    host: str = "127.0.0.1"
    """Where --web listens: 127.0.0.1 is this machine only (watch from elsewhere through `ssh -L`); 0.0.0.0 is the
    whole network, and the page has no authentication."""
    port: int = 0
    """--web's port; 0 takes the first free one from 8080."""
    classic: bool = False
    """Open MuJoCo's classic passive viewer (keys, no panels) instead of Studio."""
    plots: bool = True
    """Write PNG plots next to the video: tracking error per body part (expert) and expert weights (router)."""
    width: int = 640
    """Video width in pixels."""
    height: int = 360
    """Video height in pixels."""
    shadows: bool = True
    """Render shadows and reflections (about 3x slower with software OpenGL)."""
    experts_dir: Path | None = None
    """Folder of shipped experts; default experts/."""
    router_dir: Path | None = None
    """Folder of the shipped router; default router/."""

    @property
    def task_instruction(self) -> str:
        """The instruction played: the one given, else DEFAULT_INSTRUCTION for the router ("" for one expert)."""
        if self.instruction is not None:
            return self.instruction
        return "" if self.expert is not None else DEFAULT_INSTRUCTION

    def run(self) -> None:
        self._check()
        from metaworld_x.play.session import play

        play(self)

    def _check(self) -> None:
        """Refuse impossible settings, and outputs that cannot be written, before anything heavy is imported."""
        from metaworld_x.atomic import check_writable
        from metaworld_x.cli.numbers import check_pixels
        from metaworld_x.play.video import check_video_path

        if self.expert is None and not self.task_instruction.strip():
            raise UserError(f'the instruction is empty: say what to do, e.g. metaworld-x play "{DEFAULT_INSTRUCTION}"'
                            " (the default when none is given), or play one expert: metaworld-x play --expert walk")
        if self.expert is None:
            _check_readable(self.task_instruction)
        elif self.scripted:
            raise UserError("--scripted chains the experts a sequential instruction needs; --expert plays one alone;"
                            " choose one")
        if self.steps is not None and self.steps < 1:
            raise UserError(f"--steps must be at least 1, got {self.steps}")
        check_pixels(self.width, self.height)
        if self.video is not None:
            check_writable(check_video_path(self.video, ".mp4", "--video"), "--video")
        if self.gif is not None:
            check_writable(check_video_path(self.gif, ".gif", "--gif"), "--gif")
        self._check_viewer()
        if self.video is None and self.gif is None and not self.web:
            from metaworld_x.play.session import DEFAULT_HEADLESS_VIDEO
            from metaworld_x.play.viewer import display_problem

            if self.headless or display_problem() is not None:  # the run records DEFAULT_HEADLESS_VIDEO
                check_writable(DEFAULT_HEADLESS_VIDEO, "--video's default")


    def _check_viewer(self) -> None:
        """Refuse viewer options that contradict each other, and a --web address that cannot be listened on."""
        if not self.web:
            if self.host != Play.host or self.port != Play.port:
                raise UserError("--host and --port say where --web serves the viewer; add --web")
            return
        for flag, given in (("--video", self.video), ("--gif", self.gif)):
            if given is not None:
                raise UserError(f"--web serves the run live while {flag} records it headless; choose one")
        if self.headless or self.classic:
            flag = "--headless" if self.headless else "--classic"
            raise UserError(f"--web serves Studio's viewer to a browser; {flag} asks for another; choose one")
        from metaworld_x.play.studio import check_listen

        check_listen(self.host, self.port)


def _check_readable(instruction: str) -> None:
    """Refuse an instruction the router's English-only text encoder cannot read, which would otherwise fall back to
    standing still with a warning: one mostly in non-Latin script, or one without words."""
    from metaworld_x.routing.language import TaskResolver
    from metaworld_x.vlm.scores import non_latin_ratio
    from metaworld_x.vlm.text_prior import split_clauses

    ratio, limit = non_latin_ratio(instruction), TaskResolver().max_non_latin
    if ratio > limit:
        raise UserError(f"the instruction {instruction[:60]!r} is {ratio:.0%} non-Latin script, which the English-only"
                        f' text encoder cannot read; say it in English, e.g. metaworld-x play "{DEFAULT_INSTRUCTION}"')
    if not split_clauses(instruction):
        raise UserError(f"the instruction {instruction[:60]!r} has no words the text encoder can read; say what to do,"
                        f' e.g. metaworld-x play "{DEFAULT_INSTRUCTION}"')
