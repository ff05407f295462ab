"""An .npz archive read whole, never unpickling: a damaged or foreign file is refused in one line, whichever of the
many ways numpy and zipfile fail on it (cut short, bad checksum, not a zip, pickled content, a bare .npy)."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

from metaworld_x.errors import UserError


def read_npz(path: str | Path, refusal: str) -> dict[str, np.ndarray]:
    """Every array in `path`; `refusal` starts the message when it cannot be read (e.g. "not a readable clip .npz")."""
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("a single .npy array, not an .npz archive")
        with data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise UserError(f"{path}: {refusal} ({error})") from None
