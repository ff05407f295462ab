"""Atomic file writes: a killed run leaves the old file or the new one, never half of one.

Every artifact the project writes (policies, clips, checkpoints' side files,
plots, videos, metrics) goes through `atomic_path` (figures: `save_figure`): the writer fills a hidden
temporary file beside the target, which is flushed to disk and renamed onto
the target only when the writer finished without error, and the folder is
flushed after the rename so the new name survives a power cut. The temporary name
keeps the target's suffix, so writers that pick a format by suffix (matplotlib,
imageio) write the right one. Folders (a shipped expert or router, a
checkpoint) are filled in a staging folder and swapped in by `replace_folder`.
A command checks its outputs with `check_writable` before its work starts, so
that a long run cannot end in a write that was bound to fail.
"""

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from metaworld_x.errors import UserError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write to; on success it replaces `path` (whose folder is made if missing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        with open(tmp, "rb+") as written:  # on disk before the rename, so a crash cannot leave an empty file
            os.fsync(written.fileno())
        os.replace(tmp, path)
        fsync_folder(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def fsync_folder(path: str | Path) -> None:
    """Flush a folder's entries (names made, renamed or removed in it) to disk: a rename is durable only then."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def check_writable(path: str | Path, option: str, folder: bool = False) -> Path:
    """Refuse an output file that `atomic_path` could not put at `path` (with `folder`: a folder to write in, or to
    replace by `replace_folder`): a file where a folder should be, a folder at a file's path, or a folder that
    cannot be written in. Nothing is created. `option` names the path in the message (e.g. "--out")."""
    path = Path(path)
    if path.is_dir() and not folder:
        raise UserError(f"{option} {path} is a folder; name a file")
    if path.exists() and not path.is_dir() and folder:
        raise UserError(f"{option} {path} is a file; name a folder")
    if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"{option} {path}: the folder is not writable")
    parent = path.parent
    while not parent.exists():  # the folders atomic_path would make
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{option} {path}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option} {path}: the folder {parent} is not writable")
    return path


def write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def save_figure(fig, path: str | Path, dpi: int) -> Path:
    """Write a matplotlib figure, then close it (pyplot keeps every open figure until it is closed)."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi)
    finally:
        plt.close(fig)
    return Path(path)


def replace_folder(staging: str | Path, final: str | Path) -> Path:
    """Put the complete folder `staging` at `final`, replacing what is there: the old folder is renamed aside
    first and removed only after the new one is in place, so a kill at any point leaves one whole folder at
    `final` (or, between the two renames, the old one beside it as `.<name>.old`, which the next call clears)."""
    staging, final = Path(staging), Path(final)
    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(staging, final)
    fsync_folder(final.parent)
    shutil.rmtree(old, ignore_errors=True)
    return final
