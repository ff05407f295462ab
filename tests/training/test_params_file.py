"""A parameter file and its JSON record: written together, read back only when both are whole and match."""

import json

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.params_file import check_payload, read_record, write_params
from metaworld_x.world_model import load_world_model, save_world_model
from metaworld_x.world_model.config import WorldModelConfig
from metaworld_x.world_model.model import WorldModel

NAMES = ("net.msgpack", "net.json")


def test_a_written_pair_reads_back_with_its_checksum_and_versions(tmp_path):
    write_params(tmp_path, NAMES, b"\x01\x02\x03", {"obs_size": 7, "sha256": "caller cannot set this"}, 3)
    record, payload = read_record(tmp_path, NAMES, "net", 3)
    assert payload == b"\x01\x02\x03" and record["obs_size"] == 7 and record["format_version"] == 3
    assert record["sha256"] != "caller cannot set this" and "jax" in record["versions"]
    check_payload(tmp_path, NAMES, "net", record, payload)


def test_missing_other_format_and_corrupted_pairs_are_refused_by_name(tmp_path):
    with pytest.raises(UserError, match="no readable net in .* expected net.json and net.msgpack"):
        read_record(tmp_path, NAMES, "net", 1)
    write_params(tmp_path, NAMES, b"abc", {}, 1)
    with pytest.raises(UserError, match="net in .* has format 1, expected 2"):
        read_record(tmp_path, NAMES, "net", 2)
    (tmp_path / NAMES[0]).write_bytes(b"abd")
    record, payload = read_record(tmp_path, NAMES, "net", 1)
    with pytest.raises(UserError, match="corrupted: net.msgpack does not match its checksum"):
        check_payload(tmp_path, NAMES, "net", record, payload)


def test_a_world_model_round_trips_and_a_flipped_byte_is_refused(tmp_path):
    model = WorldModel(WorldModelConfig(latent_size=8, encoder_hidden=(16,), hidden=(16,), num_q=2, num_bins=11), 5, 3)
    params = model.init(jax.random.PRNGKey(0))
    save_world_model(tmp_path, model, params, meta={"task": "stand"})
    _, loaded, record = load_world_model(tmp_path)
    assert record["task"] == "stand" and record["obs_size"] == 5
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(loaded)):
        np.testing.assert_array_equal(a, b)
    payload = bytearray((tmp_path / "world_model.msgpack").read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    (tmp_path / "world_model.msgpack").write_bytes(bytes(payload))
    with pytest.raises(UserError, match="world model in .* is corrupted"):
        load_world_model(tmp_path)
    record["format_version"] = 0
    (tmp_path / "world_model.json").write_text(json.dumps(record))
    with pytest.raises(UserError, match="has format 0, expected 1"):
        load_world_model(tmp_path)
