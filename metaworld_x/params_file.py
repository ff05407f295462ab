"""A parameter tree on disk: flax msgpack, and beside it a JSON record that names its format and checksum.

The router and the world model are stored this way (`routing/checkpoint.py`,
`world_model/checkpoint.py`); each adds its own fields to the record and
rebuilds its network from them. Both files are written atomically; reading
refuses a missing or unreadable pair, another format version, and a payload
whose checksum is not the recorded one, each with a message that says which.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from metaworld_x.atomic import write_bytes, write_text
from metaworld_x.errors import UserError


def write_params(directory: Path, names: tuple[str, str], payload: bytes, record: dict, format_version: int) -> Path:
    """Write `payload` (serialised parameters) to `names[0]` and `record` to `names[1]` in `directory`, adding the
    format version, the payload's sha256 and the library versions."""
    from metaworld_x.training.checkpoint import versions

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    full = {"format_version": format_version, **record, "sha256": hashlib.sha256(payload).hexdigest(),
            "versions": versions()}
    write_bytes(directory / names[0], payload)
    write_text(directory / names[1], json.dumps(full, indent=2))
    return directory


def read_record(directory: Path, names: tuple[str, str], what: str, format_version: int) -> tuple[dict, bytes]:
    """(record, payload) from `directory`, refused unless both files read and the format is `format_version`.
    The checksum is checked separately (`check_payload`), so that a caller can first refuse for a clearer cause."""
    directory = Path(directory)
    try:
        record = json.loads((directory / names[1]).read_text())
        payload = (directory / names[0]).read_bytes()
    except (OSError, ValueError) as error:  # ValueError: not JSON, or not UTF-8
        raise UserError(f"no readable {what} in {directory} ({error}); expected {names[1]} and {names[0]}") from None
    if not isinstance(record, dict):
        raise UserError(f"{what} in {directory}: {names[1]} must be a JSON object, got {type(record).__name__}")
    if record.get("format_version") != format_version:
        raise UserError(f"{what} in {directory} has format {record.get('format_version')}, expected {format_version}")
    return record, payload


def check_payload(directory: Path, names: tuple[str, str], what: str, record: dict, payload: bytes) -> None:
    """Refuse a payload whose sha256 is not the one its record names."""
    if hashlib.sha256(payload).hexdigest() != record.get("sha256"):
        raise UserError(f"{what} in {directory} is corrupted: {names[0]} does not match its checksum")
