"""Checkpoints: flax msgpack (never pickle), written atomically, verified on load.

A checkpoint is a folder `step_<env steps>/` holding `state.msgpack` (the whole
training state, and the environments' state so a resumed run continues
exactly) and `meta.json` (config, versions, a checksum of the state bytes).
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

from metaworld_x.atomic import replace_folder
from metaworld_x.errors import UserError

FORMAT_VERSION = 1
STATE_FILE = "state.msgpack"
META_FILE = "meta.json"


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
    """Write checkpoint `directory/step_<step>` atomically and return its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    payload = serialization.to_bytes(state)
    record = {
        "format_version": FORMAT_VERSION,
        "step": int(step),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "versions": versions(),
        **meta,
    }
    final = directory / f"step_{step:012d}"
    tmp = directory / f".tmp_step_{step:012d}_{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    (tmp / STATE_FILE).write_bytes(payload)
    (tmp / META_FILE).write_text(json.dumps(record, indent=2, default=str))
    return replace_folder(tmp, final)


def latest(directory: Path) -> Path | None:
    """The newest complete checkpoint in directory, or None."""
    directory = Path(directory)
    if not directory.is_dir():
        return None
    complete = sorted(p for p in directory.glob("step_*") if (p / META_FILE).is_file() and (p / STATE_FILE).is_file())
    return complete[-1] if complete else None


def read_meta(path: Path) -> dict:
    path = Path(path)
    try:
        record = json.loads((path / META_FILE).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"checkpoint {path} has no readable {META_FILE} ({error}); it is incomplete or corrupted") from None
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
    for readers that need a part of it, such as the policy (`metaworld_x.policy.from_checkpoint`)."""
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
        raise UserError(f"checkpoint {path} is missing {STATE_FILE} ({error})") from None
    if hashlib.sha256(payload).hexdigest() != record.get("sha256"):
        raise UserError(f"checkpoint {path} is corrupted: {STATE_FILE} does not match the checksum in {META_FILE}")
    return payload, record


def _fitted(path: Path, load):
    try:
        return load()
    except Exception as error:  # flax raises several types on structure mismatch
        raise UserError(
            f"checkpoint {path} does not fit this run's networks or environments ({error});"
            " resume with the same config it was written with"
        ) from None
