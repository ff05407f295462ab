"""Prior labels cached on disk, so that router training queries each (model, task, frame) once."""

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from metaworld_x.experts.catalog import as_catalog
from metaworld_x.vlm.scores import ExpertScores, PriorFallbackWarning, check_frame

CACHE_ENV = "METAWORLD_X_CACHE"
KEY_VERSION = 1


def default_cache_dir() -> Path:
    """`$METAWORLD_X_CACHE/vlm`, else `~/.cache/metaworld_x/vlm`."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "metaworld_x") / "vlm"


def frame_digest(frame: np.ndarray | None) -> str | None:
    """sha256 of a frame's shape and bytes; None for no frame."""
    if frame is None:
        return None
    frame = np.ascontiguousarray(frame)
    digest = hashlib.sha256(f"{frame.dtype}{frame.shape}".encode())
    digest.update(frame.tobytes())
    return digest.hexdigest()


def cache_key(identity: dict, task: str, catalog_fingerprint: str, frame_hash: str | None) -> str:
    """sha256 of (scorer identity: model, config hash, prompt, settings; task; catalog; frame)."""
    payload = json.dumps(
        {
            "version": KEY_VERSION,
            "scorer": identity,
            "task": task,
            "experts": catalog_fingerprint,
            "frame": frame_hash,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def write_json_atomic(path: Path, payload: dict) -> None:
    """Write JSON to a temporary file beside `path`, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(payload, file, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CachedScorer:
    """Wraps a scorer; answers repeated (scorer, task, experts, frame) queries from disk.

    Files are `<cache_dir>/<key[:2]>/<key>.json`. The frame is part of the key
    only for scorers that see images. Results from a runtime error
    (`transient`) are returned but not stored. A corrupt file is rescored.
    """

    def __init__(self, scorer, cache_dir: str | Path | None = None):
        self.scorer = scorer
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.sees_image = scorer.sees_image
        self.hits = 0
        self.misses = 0

    def identity(self) -> dict:
        return self.scorer.identity()

    def key(self, frame, task: str, experts=None) -> str:
        frame_hash = frame_digest(check_frame(frame)) if self.sees_image else None
        return cache_key(self.identity(), task, as_catalog(experts).fingerprint(), frame_hash)

    def path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def score(self, frame, task: str, experts=None) -> ExpertScores:
        key = self.key(frame, task, experts)
        path = self.path(key)
        if path.is_file():
            try:
                result = ExpertScores.from_json(json.loads(path.read_text())["result"])
            except (OSError, ValueError, KeyError, TypeError):
                pass  # unreadable entry: score again and overwrite it
            else:
                self.hits += 1
                if result.fallback_reason:
                    # A cached fallback is still a fallback: say so, as the scorer did.
                    warnings.warn(f"{result.source}: {result.fallback_reason} (cached)", PriorFallbackWarning, 2)
                return result
        self.misses += 1
        result = self.scorer.score(frame, task, experts)
        if not result.transient:
            write_json_atomic(path, {"key": key, "task": task, "result": result.to_json()})
        return result

    def __getattr__(self, name):
        # segment_scores and the like pass through to the wrapped scorer.
        if name == "scorer":
            raise AttributeError(name)
        return getattr(self.scorer, name)
