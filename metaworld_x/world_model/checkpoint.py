"""World-model checkpoints: flax msgpack plus a JSON record, written atomically (`params_file`)."""

import dataclasses
from pathlib import Path

import jax
from flax import serialization

from metaworld_x.errors import UserError
from metaworld_x.params_file import check_payload, read_record, write_params
from metaworld_x.world_model.config import WorldModelConfig
from metaworld_x.world_model.model import WorldModel, WorldModelParams

FORMAT_VERSION = 1
PARAMS_FILE = "world_model.msgpack"
META_FILE = "world_model.json"
FILES = (PARAMS_FILE, META_FILE)


def save_world_model(directory: Path, model: WorldModel, params: WorldModelParams, meta: dict | None = None) -> Path:
    """Write the parameters and a record of config, sizes and library versions."""
    record = {"config": dataclasses.asdict(model.config), "obs_size": model.obs_size, "cond_size": model.cond_size,
              **(meta or {})}
    return write_params(directory, FILES, serialization.to_bytes(params), record, FORMAT_VERSION)


def load_world_model(directory: Path) -> tuple[WorldModel, WorldModelParams, dict]:
    record, payload = read_record(directory, FILES, "world model", FORMAT_VERSION)
    check_payload(directory, FILES, "world model", record, payload)
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
