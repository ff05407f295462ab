"""Data parallelism on JAX's own runtime: one mesh axis over the simulations.

Within a host the mesh spans the local devices. Across processes,
`initialize_distributed()` (called first, from the CLI's --distributed) makes
`jax.devices()` global: the mesh then spans every process's devices, the
training state is replicated on all of them, and each process simulates the
rows of the batch that its own devices hold (`ProcessShare`). Arrays pass
between a process's simulations and the global batch through `to_global` /
`to_local`; only the update and the episode sums talk across processes. On a
mesh of several devices the policy acts on the batch split over it, so each
device computes the same rows whether the devices sit in one process or in
several, and a run split over processes gives the numbers of one process with
as many devices.
"""

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

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
        if jax.process_count() > 1 and num_devices != len(devices):
            raise UserError(
                f"num_devices={num_devices} would leave out devices of a {jax.process_count()}-process run, which"
                f" sees {len(devices)}; use num_devices=0 (all)"
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


@dataclass(frozen=True)
class ProcessShare:
    """The simulations one process of a multi-process run steps: rows `rows` of the global batch of `num_envs`."""

    mesh: Mesh
    num_envs: int
    rows: slice

    @property
    def count(self) -> int:
        return self.rows.stop - self.rows.start

    def to_global(self, tree, env_axis: int = 0):
        """This process's arrays [..., count, ...] -> global arrays [..., num_envs, ...] split over the mesh."""

        def lift(x):
            x = np.asarray(x)
            shape = x.shape[:env_axis] + (self.num_envs,) + x.shape[env_axis + 1:]
            return jax.make_array_from_process_local_data(env_axis_sharding(self.mesh, env_axis, x.ndim), x, shape)

        return jax.tree_util.tree_map(lift, tree)

    def to_local(self, tree, env_axis: int = 0):
        """Global arrays split over the mesh -> this process's rows, as NumPy arrays [..., count, ...]."""

        def lower(x):
            shards = sorted(x.addressable_shards, key=lambda s: s.index[env_axis].start or 0)
            seen, parts = set(), []
            for shard in shards:  # a row block held by several local devices is taken once
                start = shard.index[env_axis].start or 0
                if start not in seen:
                    seen.add(start)
                    parts.append(np.asarray(shard.data))
            return np.concatenate(parts, axis=env_axis)

        return jax.tree_util.tree_map(lower, tree)

    def per_world_keys(self, key: jax.Array) -> jax.Array:
        """This process's worlds' reset keys: the rows of `jax.random.split(key, num_envs)`, as one process draws them."""
        return jax.random.split(key, self.num_envs)[self.rows]


def process_share(mesh: Mesh, num_envs: int) -> ProcessShare:
    """The rows of the batch of num_envs simulations that this process's devices hold (all of them in a
    single-process run)."""
    sharding = env_axis_sharding(mesh, 0, 1)
    blocks = sorted({index[0].start or 0 for index in sharding.addressable_devices_indices_map((num_envs,)).values()})
    per_device = num_envs // mesh.size
    start, stop = blocks[0], blocks[-1] + per_device
    if (stop - start) != per_device * len(blocks) or (stop - start) * jax.process_count() != num_envs:
        raise UserError(
            f"process {jax.process_index()}'s devices hold rows that do not form one block of the {num_envs}"
            " simulations; give every process the same number of devices"
        )
    return ProcessShare(mesh, num_envs, slice(start, stop))


def gather(tree):
    """Every process's part of a multi-process run's state, whole, as NumPy arrays on every process (a collective:
    all call it).

    Global arrays come back whole; process-local arrays (a cpu backend's simulations) are joined in process
    order along their first axis, which is the order of the rows `ProcessShare` gives each process. They travel as
    bytes, so that float64 physics keeps every bit (JAX would carry it as float32)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    def whole(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        x = np.asarray(x)
        if x.ndim == 0:  # the same on every process
            return x
        rows = np.ascontiguousarray(x).view(np.uint8).reshape(x.shape[0], -1)
        joined = np.asarray(multihost_utils.process_allgather(rows, tiled=True))
        return joined.view(x.dtype).reshape((-1,) + x.shape[1:])

    return jax.tree_util.tree_map(whole, tree)


def to_host(tree):
    """A replicated tree as NumPy arrays on this process: for work that one process does alone (evaluation,
    shipping) and must not wait on the others."""
    return jax.device_get(tree) if jax.process_count() > 1 else tree


def agreed(flag: bool) -> bool:
    """Process 0's `flag`, on every process (a collective: all call it), for decisions that each process would
    otherwise take by its own clock, such as a time limit's last iteration."""
    if jax.process_count() == 1:
        return flag
    from jax.experimental import multihost_utils

    return bool(multihost_utils.broadcast_one_to_all(np.asarray(flag)))


def is_main_process() -> bool:
    """Whether this process writes the run's files (process 0 of a multi-process run; the only one otherwise)."""
    return jax.process_index() == 0


def distributed_settings(environ=None) -> dict:
    """jax.distributed.initialize's coordinates from the environment.

    JAX_COORDINATOR_ADDRESS (host:port of process 0), JAX_NUM_PROCESSES and JAX_PROCESS_ID. A Kubernetes indexed
    Job's JOB_COMPLETION_INDEX stands in for JAX_PROCESS_ID; under SLURM, SLURM_NTASKS and SLURM_PROCID for the
    count and the index, and JAX finds the coordinator itself (the job's first node) where none is set."""
    environ = os.environ if environ is None else environ
    address = environ.get("JAX_COORDINATOR_ADDRESS")
    count = environ.get("JAX_NUM_PROCESSES", environ.get("SLURM_NTASKS"))
    index = environ.get("JAX_PROCESS_ID", environ.get("JOB_COMPLETION_INDEX", environ.get("SLURM_PROCID")))
    if address is None and "SLURM_PROCID" in environ:
        return {}
    given = {"JAX_COORDINATOR_ADDRESS": address, "JAX_NUM_PROCESSES": count, "JAX_PROCESS_ID": index}
    missing = [name for name, value in given.items() if value is None]
    if missing:
        raise UserError(f"--distributed needs {', '.join(missing)} set in every process (JAX_COORDINATOR_ADDRESS:"
                        " host:port of process 0; JAX_NUM_PROCESSES: how many; JAX_PROCESS_ID: 0 to N-1)")
    if ":" not in address or not address.rsplit(":", 1)[1].isdigit():
        raise UserError(f"JAX_COORDINATOR_ADDRESS must be host:port of process 0, got {address!r}")
    try:
        count, index = int(count), int(index)
    except ValueError:
        raise UserError(f"JAX_NUM_PROCESSES and JAX_PROCESS_ID must be whole numbers, got {count!r} and {index!r}") from None
    if count < 1 or not 0 <= index < count:
        raise UserError(f"JAX_PROCESS_ID must be in 0..JAX_NUM_PROCESSES-1, got {index} of {count}")
    return {"coordinator_address": address, "num_processes": count, "process_id": index}


def initialize_distributed(heartbeat_timeout_s: int) -> None:
    """Join a multi-process run (`distributed_settings`); a process silent for `heartbeat_timeout_s` counts as dead."""
    settings = distributed_settings()
    try:
        jax.distributed.initialize(**settings, heartbeat_timeout_seconds=heartbeat_timeout_s)
    except Exception as error:  # noqa: BLE001 - report any failure to join as a user error
        raise UserError(
            f"jax.distributed.initialize() failed ({error}); check that every process has the same"
            " JAX_COORDINATOR_ADDRESS and JAX_NUM_PROCESSES and its own JAX_PROCESS_ID, and that process 0 is up"
        ) from None


def leave_distributed() -> None:
    """Leave the multi-process run once its collective work is done (a barrier: every process calls it), so that
    process 0 can go on alone (shipping) while the others exit, none of them waiting at JAX's exit for the rest."""
    if jax.process_count() > 1:
        jax.distributed.shutdown()


# Words in the errors of a collective or of the coordination service when a peer process has gone.
LOST_PEER_SIGNS = ("gloo", "connection reset", "connection closed", "connection refused", "heartbeat",
                   "unavailable", "deadline_exceeded", "broken pipe")


@contextmanager
def fail_fast_across_processes():
    """In a multi-process run, end this process at once, with one line on stderr, where Python's ordinary exit would
    wait at JAX's shutdown barrier for processes that will not come: with status 1 when a collective fails because
    another process died, and with status 2 on this process's own UserError (the others then stop at their next
    exchange with it)."""
    try:
        yield
    except UserError as error:
        if jax.process_count() == 1:
            raise
        _exit(2, f"process {jax.process_index()} of {jax.process_count()}: {' '.join(str(error).split())}")
    except Exception as error:  # noqa: BLE001 - only a lost peer is handled; everything else is raised again
        if jax.process_count() == 1 or not any(sign in str(error).lower() for sign in LOST_PEER_SIGNS):
            raise
        reason = " ".join(str(error).split())
        reason = reason if len(reason) <= 200 else reason[:197] + "..."
        _exit(1, f"process {jax.process_index()} of {jax.process_count()} stopped: another process of the distributed"
                 f" run is gone ({reason}); restart every process, with --resume to continue from the last checkpoint")


def _exit(status: int, message: str) -> None:
    sys.stdout.flush()
    # on a line of its own: the progress bar, which shares stderr, ends without one
    print(f"\nerror: {message}", file=sys.stderr, flush=True)
    os._exit(status)
