"""A JSON record read from disk (policy.json, spec.json, router.json): refused in one line when it cannot be read,
is not JSON, or is not an object."""

import json
from pathlib import Path

from metaworld_x.errors import UserError


def read_json_object(path: str | Path, what: str) -> dict:
    """The JSON object in `path`; `what` names the file in the message (e.g. "the policy record")."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except OSError as error:
        raise UserError(f"{path}: cannot read {what} ({error.strerror or error})") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{path}, line {error.lineno}: {what} is not valid JSON ({error.msg})") from None
    except ValueError as error:  # bytes that are not UTF-8
        raise UserError(f"{path}: {what} is not UTF-8 text ({error})") from None
    if not isinstance(record, dict):
        raise UserError(f"{path}: {what} must be a JSON object, got {type(record).__name__}")
    return record
