"""`metaworld-x motion`: retarget human mocap to the robot, list the clip library, play a clip, check one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Union

import tyro

from metaworld_x.paths import MOTIONS_DIR


@dataclass(frozen=True)
class Retarget:
    """Retarget a human motion file (BVH, AMASS-style .npz, DeepMimic) onto the H1 as a reference clip."""

    file: tyro.conf.Positional[Path]
    """The human motion file."""
    skill: str
    """Skill label stored in the clip (stand, walk, run, ...)."""
    out: Path | None = None
    """Where to write the clip (.npz); required unless --force replaces the shipped assets/motions/<skill>.npz."""
    force: bool = False
    """Without --out, write the shipped library's clip assets/motions/<skill>.npz (replacing it)."""
    start: float = 0.0
    """Segment start (s)."""
    end: float | None = None
    """Segment end (s); default the end of the file."""
    licence: str = ""
    """The source's licence, one line, stored in the clip."""
    attribution: str = ""
    """The credit the source's licence asks for, stored in the clip."""
    iterations: int = 2
    """IK iterations per frame (warm-started)."""

    def _check(self) -> Path:
        """Refuse impossible settings before the retargeting starts; return where the clip goes: --out, or with
        --force the shipped library's clip for the skill."""
        from metaworld_x.errors import UserError

        if self.out is None and not self.force:
            raise UserError(f"say where the clip goes: --out FILE.npz (or --force to write the shipped library's"
                            f" {MOTIONS_DIR / self.skill}.npz)")
        out = self.out or MOTIONS_DIR / f"{self.skill}.npz"
        if out.suffix != ".npz":
            raise UserError(f"--out {out} must end in .npz; e.g. --out {out.with_suffix('.npz')}")
        if self.start < 0 or (self.end is not None and self.end <= self.start):
            raise UserError(f"the segment needs 0 <= --start < --end, got --start {self.start} --end {self.end}")
        return out

    def run(self) -> None:
        from metaworld_x.atomic import check_writable
        from metaworld_x.motion import load_human_motion
        from metaworld_x.motion.clip import save_clip
        from metaworld_x.motion.ik import IkConfig
        from metaworld_x.motion.retarget import RetargetConfig, SourceInfo, retarget

        config = RetargetConfig(ik=IkConfig(iterations=self.iterations))
        motion = load_human_motion(self.file)  # a missing or unreadable file is named first
        out = check_writable(self._check(), "--out")
        source = SourceInfo(kind="mocap", file=self.file.name, licence=self.licence, attribution=self.attribution)
        clip = retarget(motion, self.skill, config=config, source=source, start=self.start, end=self.end, progress=True)
        out = save_clip(clip, out)
        q = clip.quality
        print(
            f"{out}: {clip.num_frames} frames ({clip.duration:.2f} s) at {clip.fps:g} fps; "
            f"end-point error mean {100 * q['keypoint_error_mean']:.1f} cm, max {100 * q['keypoint_error_max']:.1f} cm; "
            f"penetration {100 * q['penetration']:.2f} cm; skating {100 * q['skating']:.2f} cm/s; "
            f"limit violations {q['limit_violations']}; {q['speed']:.0f} frames/s"
        )


@dataclass(frozen=True)
class List:
    """List the reference clips in a folder (default the shipped library)."""

    folder: Path = MOTIONS_DIR
    """Folder of .npz clips."""
    report: bool = False
    """Add the quality figures (errors, penetration, skating, limit violations, speed) and goals missed."""

    def run(self) -> None:
        from metaworld_x.errors import UserError
        from metaworld_x.motion.library import library_table

        if not self.folder.is_dir():
            raise UserError(f"{self.folder}: no such folder of clips")
        print(library_table(self.folder, report=self.report))


@dataclass(frozen=True)
class Show:
    """Play a clip kinematically: the viewer when a display exists, else a video, the human beside the robot."""

    clip: tyro.conf.Positional[Path]
    """The clip (.npz), or a skill name from the shipped library."""
    video: Path | None = None
    """Write an .mp4 here instead of opening the viewer."""
    width: int = 640
    """Video width in pixels."""
    height: int = 480
    """Video height in pixels."""
    human_offset: float = 1.0
    """The human skeleton is drawn this far to the robot's left (m)."""
    loops: int = 1
    """How many times the viewer plays the clip."""

    def run(self) -> None:
        import os

        from metaworld_x.atomic import check_writable
        from metaworld_x.cli.numbers import check_pixels
        from metaworld_x.errors import UserError
        from metaworld_x.motion.clip import read_clip
        from metaworld_x.motion.playback import play_in_viewer, write_video

        check_pixels(self.width, self.height)
        if self.loops < 1:
            raise UserError(f"--loops must be at least 1, got {self.loops}")
        if self.video is not None and self.video.suffix.lower() != ".mp4":
            raise UserError(f"--video {self.video} must end in .mp4; e.g. --video {self.video.with_suffix('.mp4').name}")
        path = self.clip if self.clip.suffix == ".npz" or self.clip.exists() else MOTIONS_DIR / f"{self.clip}.npz"
        read_clip(path)  # an unreadable clip is refused before a window opens or a video starts
        _check_framebuffer(self.width, self.height)
        if self.video is None and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            video = check_writable(path.with_suffix(".mp4").name, "--video's default")
            print(f"no display; writing the video {video} instead (pass --video to choose where)")
            write_video(path, video, self.width, self.height, self.human_offset)
        elif self.video is not None:
            check_writable(self.video, "--video")
            write_video(path, self.video, self.width, self.height, self.human_offset)
        else:
            play_in_viewer(path, self.human_offset, self.loops)


def _check_framebuffer(width: int, height: int) -> None:
    """Refuse a video larger than the playback scene's off-screen framebuffer (its MJCF's <global offwidth>)."""
    from metaworld_x.errors import UserError
    from metaworld_x.scene import build_model

    visual = build_model("floor", "h1").vis.global_
    if width > visual.offwidth or height > visual.offheight:
        raise UserError(f"--width and --height must be at most {visual.offwidth}x{visual.offheight} pixels (the"
                        f" scene's framebuffer), got {width}x{height}")


# `motion check`'s exit status when it finds something the robot cannot follow (2 is bad input, as everywhere).
PROBLEMS_FOUND = 1


@dataclass(frozen=True)
class Check:
    """Say what in a motion the robot cannot follow, before any training is spent: joints past their limits,
    self-collision, the body through the floor, the centre of mass off its support for long, joints faster than the
    motors; each with how to fix it. Exit status 0: nothing found; 1: problems found; 2: the file cannot be read."""

    file: tyro.conf.Positional[Path]
    """A retargeted clip (.npz), or a .bvh or DeepMimic .txt, retarget first as `train expert NAME --clip` does."""

    def run(self) -> int:
        from metaworld_x.motion.followability import check_clip
        from metaworld_x.experts.own_motion import clip_from_file
        from metaworld_x.robot import robot_spec

        clip = clip_from_file(self.file, "check")
        findings = check_clip(clip, robot_spec("h1").compile())
        print(f"{self.file}: {clip.num_frames} frames ({clip.duration:.2f} s) at {clip.fps:g} fps")
        width = max(len(f.check) for f in findings)
        for finding in findings:
            print(f"{finding.check.ljust(width)}  {'ok' if finding.ok else 'PROBLEM'}: {finding.summary}")
            if not finding.ok:
                print(f"{''.ljust(width)}  fix: {finding.fix}")
        problems = [f.check for f in findings if not f.ok]
        if not problems:
            print("clean: nothing found that the robot cannot follow")
            return 0
        print(f"{len(problems)} problem(s) ({', '.join(problems)}): fix them before training on this motion")
        return PROBLEMS_FOUND


@dataclass(frozen=True)
class Motion:
    """Reference motions: retarget mocap onto the robot, list the library, play a clip, check one can be followed."""

    command: Union[
        Annotated[Retarget, tyro.conf.subcommand("retarget")],
        Annotated[List, tyro.conf.subcommand("list")],
        Annotated[Show, tyro.conf.subcommand("show")],
        Annotated[Check, tyro.conf.subcommand("check")],
    ]

    def run(self) -> int | None:
        return self.command.run()
