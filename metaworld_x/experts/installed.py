"""The installed expert set: names, policies, specs and a hash of each policy's parameters."""

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from flax import serialization

from metaworld_x.errors import UserError
from metaworld_x.experts.policy import PolicyParams, load_policy


def policy_hash(params: PolicyParams) -> str:
    """sha256 of the policy's arrays, serialised as save_policy writes them (short hex)."""
    arrays = {
        "obs_mean": np.asarray(params.obs_mean, np.float32),
        "obs_std": np.asarray(params.obs_std, np.float32),
        "weights": {str(i): np.asarray(w, np.float32) for i, w in enumerate(params.weights)},
        "biases": {str(i): np.asarray(b, np.float32) for i, b in enumerate(params.biases)},
    }
    return hashlib.sha256(serialization.msgpack_serialize(arrays)).hexdigest()[:16]


def installed_experts(experts_dir: Path) -> dict[str, Path]:
    """{name: folder} of every experts/<name>/policy.json, sorted by name (the router's output order)."""
    experts_dir = Path(experts_dir)
    found = {p.parent.name: p.parent for p in sorted(experts_dir.glob("*/policy.json"))}
    if not found:
        raise UserError(f"no trained experts in {experts_dir}; train one with `metaworld-x train expert walk`")
    return found


@dataclass(frozen=True, eq=False)  # holds arrays: compare record() instead
class ExpertSet:
    """Experts in the router's output order."""

    names: tuple[str, ...]
    params: tuple[PolicyParams, ...]
    specs: tuple[dict, ...]

    def __post_init__(self):
        if len(set(self.names)) != len(self.names):
            raise UserError(f"expert names must be distinct, got {list(self.names)}")
        sizes = {name: int(p.biases[-1].shape[0] // 2) for name, p in zip(self.names, self.params)}
        if len(set(sizes.values())) > 1:
            raise UserError(f"experts must share one action space to be mixed; action sizes: {sizes}")

    @classmethod
    def load(cls, directories: Mapping[str, Path] | Sequence[Path]) -> "ExpertSet":
        """From {name: folder}, or folders named after their skill (spec 'skill' wins)."""
        named = isinstance(directories, Mapping)
        pairs = list(directories.items()) if named else [(Path(d).name, Path(d)) for d in directories]
        names, params, specs = [], [], []
        for name, directory in pairs:
            p, spec = load_policy(directory)
            names.append(name if named else spec.get("skill", name))
            params.append(p)
            specs.append(spec)
        return cls(tuple(names), tuple(params), tuple(specs))

    @property
    def action_size(self) -> int:
        return int(self.params[0].biases[-1].shape[0] // 2)

    def record(self) -> list[dict]:
        """[{'name', 'hash'}] in order: what a router checkpoint is bound to."""
        return [{"name": n, "hash": policy_hash(p)} for n, p in zip(self.names, self.params)]
