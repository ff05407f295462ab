"""Frames to .mp4 and .gif files, written atomically (a killed run leaves no half file)."""

import warnings
from pathlib import Path

import numpy as np

from metaworld_x.atomic import atomic_path
from metaworld_x.errors import UserError

VIDEO_SUFFIXES = (".mp4", ".gif")
# GIFs are for READMEs and chats: smaller and fewer frames keep them a few MB
GIF_MAX_WIDTH = 400
GIF_MAX_FPS = 12.5


def check_video_path(path: Path, suffix: str, option: str) -> Path:
    """Refuse a path with the wrong suffix or an unwritable folder before any simulation runs."""
    path = Path(path)
    if path.suffix.lower() != suffix:
        raise UserError(f"{option} {path} must end in {suffix}; e.g. {option} {path.with_suffix(suffix).name}")
    folder = path.parent if str(path.parent) else Path(".")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{option} {path}: {folder} is not a folder")
    return path


class VideoSink:
    """Collects frames [H, W, 3] uint8 and writes them once, at `close()`.

    Frames stay in memory: a 10 s play at 25 fps and 640x360 is about 170 MB
    at most, and writing at the end makes the file appear complete or not at all.
    """

    def __init__(self, fps: float, mp4: Path | None = None, gif: Path | None = None):
        self.fps, self.mp4, self.gif = fps, mp4, gif
        self.frames: list[np.ndarray] = []

    def add(self, frame: np.ndarray) -> None:
        self.frames.append(np.ascontiguousarray(frame))

    def close(self) -> list[Path]:
        """Write the files; returns the paths written."""
        written = []
        if not self.frames:
            return written
        if self.mp4 is not None:
            written.append(write_mp4(self.frames, self.mp4, self.fps))
        if self.gif is not None:
            written.append(write_gif(self.frames, self.gif, self.fps))
        return written


def write_mp4(frames: list[np.ndarray], path: Path, fps: float) -> Path:
    import imageio.v2 as imageio

    with atomic_path(path) as tmp, warnings.catch_warnings():
        # imageio starts ffmpeg with fork+exec; JAX's warning about fork in a
        # threaded process concerns children that go on running Python
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        # macro_block_size=1: keep odd sizes as they are instead of resizing with a warning
        with imageio.get_writer(tmp, fps=fps, macro_block_size=1) as writer:
            for frame in frames:
                writer.append_data(frame)
    return Path(path)


def write_gif(frames: list[np.ndarray], path: Path, fps: float) -> Path:
    import imageio.v3 as iio
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    every = max(1, round(fps / GIF_MAX_FPS))
    frames, fps = frames[::every], fps / every
    height, width = frames[0].shape[:2]
    if width > GIF_MAX_WIDTH:
        size = (GIF_MAX_WIDTH, round(height * GIF_MAX_WIDTH / width))
        frames = [np.asarray(Image.fromarray(f).resize(size, Image.LANCZOS)) for f in frames]
    with atomic_path(path) as tmp:
        iio.imwrite(tmp, np.stack(frames), extension=".gif", duration=1000 / fps, loop=0)
    return path
