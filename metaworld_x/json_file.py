"""JSON records on disk (policy.json, spec.json, router.json, metrics): one read is refused in one line when it
cannot be read, is not JSON, or is not an object; a value to write is given the form JSON holds (`jsonable`)."""

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

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


def jsonable(value):
    """`value` as JSON holds it: arrays (NumPy or JAX) as nested lists, dataclasses as dicts, tuples as lists, and
    anything else JSON has no type for as its `str`. Also the `default` of a `json.dumps` that writes such values."""
    return json.loads(json.dumps(value, default=_json_form))


def _json_form(value):
    """One value `json.dumps` cannot write, in a form it can."""
    jax = sys.modules.get("jax")  # a JAX array exists only where jax was imported: no need to import it here
    if isinstance(value, (np.ndarray, np.generic)) or (jax is not None and isinstance(value, jax.Array)):
        return np.asarray(value).tolist()
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return str(value)
