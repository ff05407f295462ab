"""World-model checkpoints: flax msgpack plus a JSON record, written atomically."""

import dataclasses
import hashlib
import json
from pathlib import Path

import jax
from flax import serialization

from metaworld_x.atomic import write_bytes, write_text
from metaworld_x.errors import UserError
from metaworld_x.world_model.config import WorldModelConfig
from metaworld_x.world_model.model import WorldModel, WorldModelParams

FORMAT_VERSION = 1
PARAMS_FILE = "world_model.msgpack"
META_FILE = "world_model.json"


def save_world_model(directory: Path, model: WorldModel, params: WorldModelParams, meta: dict | None = None) -> Path:
    """Write the parameters and a record of config, sizes and library versions."""
    from metaworld_x.training.checkpoint import versions

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    payload = serialization.to_bytes(params)
    record = {
        "format_version": FORMAT_VERSION,
        "config": dataclasses.asdict(model.config),
        "obs_size": model.obs_size,
        "cond_size": model.cond_size,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "versions": versions(),
        **(meta or {}),
    }
    write_bytes(directory / PARAMS_FILE, payload)
    write_text(directory / META_FILE, json.dumps(record, indent=2))
    return directory


def load_world_model(directory: Path) -> tuple[WorldModel, WorldModelParams, dict]:
    directory = Path(directory)
    try:
        record = json.loads((directory / META_FILE).read_text())
        payload = (directory / PARAMS_FILE).read_bytes()
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"no readable world model in {directory} ({error}); expected {META_FILE} and {PARAMS_FILE}") from None
    if record.get("format_version") != FORMAT_VERSION:
        raise UserError(f"world model in {directory} has format {record.get('format_version')}, expected {FORMAT_VERSION}")
    if hashlib.sha256(payload).hexdigest() != record.get("sha256"):
        raise UserError(f"world model in {directory} is corrupted: {PARAMS_FILE} does not match its checksum")
    config = record["config"]
    for name in ("encoder_hidden", "hidden"):
        config[name] = tuple(config[name])
    model = WorldModel(WorldModelConfig(**config), record["obs_size"], record["cond_size"])
    template = jax.eval_shape(model.init, jax.random.PRNGKey(0))  # structure only; nothing is compiled
    try:
        params = serialization.from_bytes(template, payload)
    except Exception as error:  # flax raises several types on a structure mismatch
        raise UserError(f"world model in {directory} does not match its recorded config ({error})") from None
    return model, params, record
