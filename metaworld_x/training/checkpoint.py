"""Checkpoints: flax msgpack (never pickle), written atomically and durably, verified on load.

A checkpoint is a folder `step_<env steps>/` holding `state.msgpack` (the whole
training state, and the environments' state so a resumed run continues
exactly) and `meta.json` (config, versions, a checksum of the state bytes, and
the evaluation of its iteration where there was one). A resume takes the newest
checkpoint that verifies (`newest_verified`); `prune` keeps a run's newest
checkpoints and its best evaluated one.
"""

import hashlib
import json
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from metaworld_x.atomic import fsync_folder, replace_folder
from metaworld_x.errors import UserError

FORMAT_VERSION = 1
STATE_FILE = "state.msgpack"
META_FILE = "meta.json"
TMP_PREFIX = ".tmp_step_"  # a checkpoint being written: .tmp_step_<step>_<writer's pid>
# What ranks evaluated checkpoints for `best`: the success rate first (the goal), then the return (finer).
RANKED_BY = ("eval/success_rate", "eval/return")


class CorruptCheckpointError(UserError):
    """A checkpoint whose files are missing, unreadable or fail their checksum: a resume passes over it to an older
    one."""


def versions() -> dict[str, str]:
    """Versions that change numerical results; recorded in every checkpoint."""
    found = {}
    for package in ("metaworld-x", "jax", "jaxlib", "flax", "optax", "brax", "mujoco", "mujoco-mjx"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


def save(directory: Path, step: int, state: Any, meta: dict) -> Path:
    """Write checkpoint `directory/step_<step>` atomically and durably (files and folders fsynced) and return its path.

    Temporary folders that killed writers left in `directory` are removed first."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(directory)
    payload = serialization.to_bytes(state)
    record = {
        "format_version": FORMAT_VERSION,
        "step": int(step),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "versions": versions(),
        **meta,
    }
    final = directory / f"step_{step:012d}"
    tmp = directory / f"{TMP_PREFIX}{step:012d}_{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _write_synced(tmp / STATE_FILE, payload)
    _write_synced(tmp / META_FILE, json.dumps(record, indent=2, default=str).encode())
    fsync_folder(tmp)
    return replace_folder(tmp, final)  # which fsyncs `directory` after the rename


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Remove what killed writers left in `directory`: staging folders of other processes, and old folders that
    `replace_folder` had renamed aside. Returns what was removed."""
    directory = Path(directory)
    own = f"_{os.getpid()}"
    stale = [p for p in directory.glob(f"{TMP_PREFIX}*") if not p.name.endswith(own)]
    stale += list(directory.glob(".step_*.old"))
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


def listed(directory: Path) -> list[Path]:
    """Every complete checkpoint in directory (both files present, not yet verified), oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("step_*") if (p / META_FILE).is_file() and (p / STATE_FILE).is_file())


def latest(directory: Path) -> Path | None:
    """The newest complete checkpoint in directory, or None (unverified: `newest_verified` checks the bytes)."""
    complete = listed(directory)
    return complete[-1] if complete else None


def newest_verified(directory: Path) -> tuple[Path | None, list[str]]:
    """(the newest checkpoint in directory whose files read back and match their checksum, or None; why each newer
    one was passed over). A wrong format version is not passed over: it raises, as `read_meta` does."""
    skipped = []
    for path in reversed(listed(directory)):
        try:
            _verified_payload(path)
        except CorruptCheckpointError as error:
            skipped.append(str(error))
            continue
        return path, skipped
    return None, skipped


def evaluation(path: Path) -> tuple[float, ...] | None:
    """The checkpoint's evaluation as a sortable key (`RANKED_BY`), or None where its iteration was not evaluated."""
    scores = read_meta(path).get("evaluation") or {}
    if not all(key in scores for key in RANKED_BY):
        return None
    return tuple(float(scores[key]) for key in RANKED_BY)


def best(directory: Path) -> Path | None:
    """The best evaluated checkpoint in directory (`RANKED_BY`; the newer of equals), or None where none was
    evaluated."""
    scored = []
    for path in listed(directory):
        try:
            score = evaluation(path)
        except UserError:  # unreadable or of another format: not a candidate
            continue
        if score is not None:
            scored.append((score, path))
    return max(scored)[1] if scored else None


def prune(directory: Path, keep: int) -> list[Path]:
    """Remove all but the `keep` newest checkpoints in directory and its best evaluated one (`best`); keep <= 0
    keeps every one. Returns what was removed."""
    if keep <= 0:
        return []
    complete = listed(directory)
    kept = set(complete[-keep:]) | {best(directory)}
    removed = [p for p in complete if p not in kept]
    for path in removed:
        shutil.rmtree(path)
    if removed:
        fsync_folder(directory)
    return removed


def read_meta(path: Path) -> dict:
    path = Path(path)
    try:
        record = json.loads((path / META_FILE).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise CorruptCheckpointError(f"checkpoint {path} has no readable {META_FILE} ({error}); it is incomplete or corrupted") from None
    if record.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"checkpoint {path} has format version {record.get('format_version')}, this metaworld-x reads"
            f" version {FORMAT_VERSION}; retrain, or load it with the metaworld-x {record.get('versions', {}).get('metaworld-x', '?')} that wrote it"
        )
    return record


def restore(path: Path, template: Any) -> tuple[Any, dict]:
    """Load a checkpoint into the structure of `template`; refuse anything suspect."""
    payload, record = _verified_payload(path)
    return _fitted(path, lambda: serialization.from_bytes(template, payload)), record


def restore_part(path: Path, key: str, template: Any) -> tuple[Any, dict]:
    """Load only entry `key` of a checkpoint's state (e.g. "training" without the environments) into `template`.

    How a run starts from another run's networks, optimiser, normaliser and
    multiplier while its environments are set up afresh (a fine-tune whose
    task settings differ)."""
    entry, record = read_entry(path, key)
    state = _fitted(path, lambda: serialization.from_state_dict(template, entry))
    shapes = lambda tree: [np.shape(leaf) for leaf in jax.tree_util.tree_leaves(tree)]  # noqa: E731
    if shapes(state) != shapes(template):  # from_state_dict takes any array where the template has one
        raise UserError(
            f"checkpoint {path} does not fit this run's networks (array shapes differ);"
            " start from a run with the same policy_hidden and value_hidden"
        )
    return state, record


def read_entry(path: Path, key: str) -> tuple[Any, dict]:
    """Entry `key` of a checkpoint's state as plain nested dicts of arrays (no template), and its meta record:
    for readers that need a part of it, such as the policy (`metaworld_x.experts.policy.from_checkpoint`)."""
    payload, record = _verified_payload(path)
    entries = _fitted(path, lambda: serialization.msgpack_restore(payload))
    if not isinstance(entries, dict) or key not in entries:
        raise UserError(f"checkpoint {path} holds no {key!r} state; it was not written by this trainer")
    return entries[key], record


def _verified_payload(path: Path) -> tuple[bytes, dict]:
    """(the state bytes, the meta record) of a checkpoint whose version and checksum are right."""
    path = Path(path)
    record = read_meta(path)
    try:
        payload = (path / STATE_FILE).read_bytes()
    except OSError as error:
        raise CorruptCheckpointError(f"checkpoint {path} is missing {STATE_FILE} ({error})") from None
    if hashlib.sha256(payload).hexdigest() != record.get("sha256"):
        raise CorruptCheckpointError(f"checkpoint {path} is corrupted: {STATE_FILE} does not match the checksum in {META_FILE}")
    return payload, record


def _fitted(path: Path, load):
    try:
        return load()
    except Exception as error:  # flax raises several types on structure mismatch
        raise UserError(
            f"checkpoint {path} does not fit this run's networks or environments ({error});"
            " resume with the same config it was written with"
        ) from None
