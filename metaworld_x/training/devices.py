"""Data parallelism on JAX's own runtime: one mesh axis over the simulations.

Within a host the mesh spans the local devices; across hosts,
`jax.distributed.initialize()` (called first, from the CLI's --distributed)
makes `jax.devices()` global and each process contributes its own share of
simulations with `make_array_from_process_local_data`.
"""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from metaworld_x.errors import UserError

AXIS = "data"


def make_mesh(num_devices: int = 0) -> Mesh:
    devices = jax.devices()
    if num_devices:
        if num_devices > len(devices):
            raise UserError(
                f"asked for {num_devices} devices but JAX sees {len(devices)} ({devices[0].platform});"
                " on a CPU, XLA_FLAGS=--xla_force_host_platform_device_count=N makes N"
            )
        devices = devices[:num_devices]
    return Mesh(np.asarray(devices), (AXIS,))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def env_axis_sharding(mesh: Mesh, env_axis: int, ndim: int) -> NamedSharding:
    spec = [None] * ndim
    spec[env_axis] = AXIS
    return NamedSharding(mesh, PartitionSpec(*spec))


def shard_envs(tree, mesh: Mesh, env_axis: int, num_envs: int):
    """Split every leaf whose env axis has num_envs entries over the mesh; replicate the rest."""

    def place(x):
        x = jax.numpy.asarray(x)
        if x.ndim > env_axis and x.shape[env_axis] == num_envs:
            return jax.device_put(x, env_axis_sharding(mesh, env_axis, x.ndim))
        return jax.device_put(x, replicated(mesh))

    return jax.tree_util.tree_map(place, tree)


def initialize_distributed() -> None:
    """Join a multi-host run; coordinates come from the usual JAX environment variables."""
    try:
        jax.distributed.initialize()
    except Exception as error:  # noqa: BLE001 - report any failure to join as a user error
        raise UserError(
            f"jax.distributed.initialize() failed ({error}); set JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES"
            " and JAX_PROCESS_ID (or run under SLURM/Kubernetes, which JAX detects)"
        ) from None
