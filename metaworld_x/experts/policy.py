"""A trained policy as a pure function, loadable without the training code.

`act(params, obs) -> action` normalises the observation with the training
run's statistics, runs the MLP and returns the mean action squashed to
[-1, 1]. It needs only jax and flax's serialisation. `export_onnx` writes the
same computation as an ONNX graph.
"""

import json
from collections.abc import Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization, struct

from metaworld_x.atomic import atomic_path, write_bytes, write_text
from metaworld_x.errors import UserError

POLICY_FILE = "policy.msgpack"
SPEC_FILE = "policy.json"
FORMAT_VERSION = 1
OBS_CLIP = 10.0  # as in training (metaworld_x.training.networks)


@struct.dataclass
class PolicyParams:
    obs_mean: jax.Array  # [o]
    obs_std: jax.Array  # [o]
    weights: tuple  # per layer [in, out]
    biases: tuple  # per layer [out]


def act(params: PolicyParams, obs: jax.Array) -> jax.Array:
    """Deterministic action [..., a] in [-1, 1] for observations [..., o]."""
    hidden = jnp.clip((obs - params.obs_mean) / params.obs_std, -OBS_CLIP, OBS_CLIP)
    last = len(params.weights) - 1
    for i, (w, b) in enumerate(zip(params.weights, params.biases)):
        hidden = hidden @ w + b
        if i < last:
            hidden = jax.nn.swish(hidden)
    mean, _ = jnp.split(hidden, 2, axis=-1)
    return jnp.tanh(mean)


def from_training(policy_params, normalizer, obs_key: str = "state") -> PolicyParams:
    """Convert brax MLP parameters and running statistics into PolicyParams. `normalizer`: brax's running
    statistics, the same fields as a mapping (a checkpoint read back), or None for none."""
    layers = policy_params["params"]
    names = sorted(layers, key=lambda n: int(n.rsplit("_", 1)[1]))
    statistics = normalizer if isinstance(normalizer, Mapping) else vars(normalizer) if normalizer is not None else {}
    if "mean" in statistics:
        mean, std = statistics["mean"][obs_key], statistics["std"][obs_key]
    else:
        size = layers[names[0]]["kernel"].shape[0]
        mean, std = jnp.zeros(size), jnp.ones(size)
    return PolicyParams(
        obs_mean=jnp.asarray(mean, jnp.float32),
        obs_std=jnp.asarray(std, jnp.float32),
        weights=tuple(jnp.asarray(layers[n]["kernel"], jnp.float32) for n in names),
        biases=tuple(jnp.asarray(layers[n]["bias"], jnp.float32) for n in names),
    )


def from_checkpoint(path: Path) -> PolicyParams:
    """The policy of a training checkpoint (`runs/SKILL/checkpoints/step_N`): its network and input statistics,
    as `ship_expert` would export them, without the optimiser, critics or environments."""
    from metaworld_x.training import checkpoint

    training, _ = checkpoint.read_entry(path, "training")
    try:
        return from_training(training["params"]["policy"], training["normalizer"])
    except (KeyError, TypeError) as error:
        raise UserError(f"checkpoint {path} holds no policy network ({error!r} missing); it was not written by"
                        " `metaworld-x train expert`") from None


def save_policy(params: PolicyParams, directory: Path, spec: dict) -> Path:
    """Write policy.msgpack and policy.json atomically; spec describes the observation and action."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    record = {
        "format_version": FORMAT_VERSION,
        "observation_size": int(params.obs_mean.shape[0]),
        "action_size": int(params.biases[-1].shape[0] // 2),
        "hidden_sizes": [int(b.shape[0]) for b in params.biases[:-1]],
        "activation": "swish",
        **spec,
    }
    arrays = {
        "obs_mean": np.asarray(params.obs_mean),
        "obs_std": np.asarray(params.obs_std),
        "weights": {str(i): np.asarray(w) for i, w in enumerate(params.weights)},
        "biases": {str(i): np.asarray(b) for i, b in enumerate(params.biases)},
    }
    write_bytes(directory / POLICY_FILE, serialization.msgpack_serialize(arrays))
    write_text(directory / SPEC_FILE, json.dumps(record, indent=2))
    return directory


def load_policy(directory: Path) -> tuple[PolicyParams, dict]:
    """Read a policy written by save_policy; refuse a missing, unreadable, foreign or non-finite one clearly."""
    from metaworld_x.json_file import read_json_object

    directory = Path(directory)
    spec_path, params_path = directory / SPEC_FILE, directory / POLICY_FILE
    if not spec_path.is_file() or not params_path.is_file():
        raise UserError(f"no policy in {directory}: expected {SPEC_FILE} and {POLICY_FILE}")
    spec = read_json_object(spec_path, "the policy record")
    if spec.get("format_version") != FORMAT_VERSION:
        raise UserError(f"policy in {directory} has format {spec.get('format_version')}, expected {FORMAT_VERSION}")
    try:
        arrays = serialization.msgpack_restore(params_path.read_bytes())
        count = len(arrays["weights"])
        params = PolicyParams(
            obs_mean=jnp.asarray(arrays["obs_mean"]),
            obs_std=jnp.asarray(arrays["obs_std"]),
            weights=tuple(jnp.asarray(arrays["weights"][str(i)]) for i in range(count)),
            biases=tuple(jnp.asarray(arrays["biases"][str(i)]) for i in range(count)),
        )
    except Exception as error:  # msgpack raises several types on corrupt input; a foreign tree lacks our keys
        raise UserError(f"policy file {params_path} is corrupted ({error!r})") from None
    if params.obs_mean.shape[:1] != (spec.get("observation_size"),):
        raise UserError(f"policy in {directory}: parameters do not match {SPEC_FILE}")
    # NaN or inf anywhere in the network makes every action non-finite, which an evaluation would score as a still robot
    bad = [name for name, value in (("obs_mean", params.obs_mean), ("obs_std", params.obs_std),
                                    *((f"weights[{i}]", w) for i, w in enumerate(params.weights)),
                                    *((f"biases[{i}]", b) for i, b in enumerate(params.biases)))
           if not bool(jnp.isfinite(value).all())]
    if bad:
        raise UserError(f"policy in {directory} holds non-finite parameters ({', '.join(bad)}), so its actions would be"
                        " non-finite; retrain it or restore the folder")
    return params, spec


def export_onnx(params: PolicyParams, path: Path, opset: int = 17) -> Path:
    """Write the deterministic policy as ONNX: obs [N, o] float32 -> action [N, a]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name, value):
        return numpy_helper.from_array(np.asarray(value, np.float32), name)

    initializers = [const("obs_mean", params.obs_mean), const("obs_std", params.obs_std)]
    initializers += [const("clip_low", -OBS_CLIP), const("clip_high", OBS_CLIP)]
    nodes = [
        helper.make_node("Sub", ["obs", "obs_mean"], ["centred"]),
        helper.make_node("Div", ["centred", "obs_std"], ["scaled"]),
        helper.make_node("Clip", ["scaled", "clip_low", "clip_high"], ["h0"]),
    ]
    last = len(params.weights) - 1
    current = "h0"
    for i, (w, b) in enumerate(zip(params.weights, params.biases)):
        initializers += [const(f"w{i}", w), const(f"b{i}", b)]
        nodes += [helper.make_node("MatMul", [current, f"w{i}"], [f"mm{i}"]), helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"z{i}"])]
        if i < last:
            nodes += [helper.make_node("Sigmoid", [f"z{i}"], [f"s{i}"]), helper.make_node("Mul", [f"z{i}", f"s{i}"], [f"a{i}"])]
            current = f"a{i}"
        else:
            current = f"z{i}"
    action_size = int(params.biases[-1].shape[0] // 2)
    initializers += [
        numpy_helper.from_array(np.array([0], np.int64), "start"),
        numpy_helper.from_array(np.array([action_size], np.int64), "end"),
        numpy_helper.from_array(np.array([1], np.int64), "axis"),
    ]
    nodes += [helper.make_node("Slice", [current, "start", "end", "axis"], ["mean"]), helper.make_node("Tanh", ["mean"], ["action"])]
    graph = helper.make_graph(
        nodes,
        "metaworld_x_policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", int(params.obs_mean.shape[0])])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", action_size])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="metaworld-x")
    onnx.checker.check_model(model)
    with atomic_path(path) as tmp:
        onnx.save(model, str(tmp))
    return Path(path)
