"""Training split over processes on one machine (`train expert --distributed`), on the cpu backend.

Two processes with one CPU device each train exactly as one process with two devices at the same global batch;
process 0 alone writes the run and ships; a process that dies stops the other with one line, not a hang.
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from metaworld_x.errors import UserError
from metaworld_x.paths import MOTIONS_DIR
from metaworld_x.training import checkpoint
from metaworld_x.training.devices import distributed_settings

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "stand.npz").is_file(), reason="the shipped clip library is missing")

# 8 simulations in 2 minibatches of 4: each of 2 devices holds 2 simulations of every minibatch
TINY = ["--num-envs", "8", "--unroll-length", "4", "--num-minibatches", "2", "--eval-every", "0", "--no-video"]
STEPS = 8 * 4 * 3  # three iterations


@pytest.fixture(scope="module")
def jax_env(tmp_path_factory) -> dict:
    """The environment of every process these tests start: JAX on the CPU, one compilation cache between them."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_", "SLURM_")) and k not in ("XLA_FLAGS", "JOB_COMPLETION_INDEX")}
    # without XLA's optimisations: these networks are tiny, and compiling is most of each process's time
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_backend_optimization_level=0", JAX_COMPILATION_CACHE_DIR=str(tmp_path_factory.mktemp("jax_cache")),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _train(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "metaworld_x.cli", "train", "expert", "stand", *TINY, *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))


def _pair(tmp_path: Path, env: dict, args: list[str]) -> list[subprocess.Popen]:
    """Processes 0 and 1 of a run on localhost; process i writes (if anything) under tmp_path/p<i>."""
    address = f"127.0.0.1:{_free_port()}"
    return [
        _train([*args, "--distributed", "--run-dir", str(tmp_path / f"p{i}" / "run"), "--out", str(tmp_path / f"p{i}" / "expert")],
               {**env, "JAX_COORDINATOR_ADDRESS": address, "JAX_COORDINATOR_BIND_ADDRESS": address,  # not every interface
                "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": str(i)},
               tmp_path / f"p{i}.log")
        for i in range(2)
    ]


def _finish(process: subprocess.Popen, log: Path, timeout: float = 400) -> None:
    try:
        process.wait(timeout=timeout)
    finally:
        process.kill()
    assert process.returncode == 0, log.read_text()[-3000:]


def _entries(run: Path) -> dict:
    newest = checkpoint.latest(run / "checkpoints")
    return {key: checkpoint.read_entry(newest, key)[0] for key in ("training", "env", "tracker")}


def test_two_processes_train_as_one_process_with_two_devices(tmp_path, jax_env):
    one = _train(["--total-env-steps", str(STEPS), "--no-ship", "--run-dir", str(tmp_path / "one")],
                 {**jax_env, "XLA_FLAGS": jax_env["XLA_FLAGS"] + " --xla_force_host_platform_device_count=2"}, tmp_path / "one.log")
    pair = _pair(tmp_path, jax_env, ["--total-env-steps", str(STEPS)])
    for process, log in zip([one, *pair], ["one.log", "p0.log", "p1.log"]):
        _finish(process, tmp_path / log)

    # process 0 wrote the run and shipped; process 1 wrote nothing
    assert not (tmp_path / "p1").exists()
    assert (tmp_path / "p0" / "expert" / "policy.msgpack").is_file()
    rows = [json.loads(line) for line in (tmp_path / "p0" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [row["env_steps"] for row in rows] == [32, 64, 96]

    # the same numbers as one process with two devices: networks, optimiser, normaliser, λ, every simulation's
    # physics (float64) and the episode sums
    two, single = _entries(tmp_path / "p0" / "run"), _entries(tmp_path / "one")
    leaves = jax.tree_util.tree_leaves_with_path(single)
    assert len(leaves) == len(jax.tree_util.tree_leaves(two))
    worst = 0.0
    for (path, expected), got in zip(leaves, jax.tree_util.tree_leaves(two)):
        expected, got = np.asarray(expected), np.asarray(got)
        assert expected.shape == got.shape, jax.tree_util.keystr(path)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=jax.tree_util.keystr(path))
        if expected.dtype.kind == "f" and expected.size:
            worst = max(worst, float(np.max(np.abs(got - expected))))
    print(f"largest difference from one process with two devices: {worst:.3g}")


def test_a_killed_process_stops_the_other_with_one_line(tmp_path, jax_env):
    pair = _pair(tmp_path, jax_env, ["--total-env-steps", str(8 * 4 * 100_000), "--no-ship"])
    metrics = tmp_path / "p0" / "run" / "metrics.jsonl"
    try:
        deadline = time.monotonic() + 400
        while not metrics.is_file():  # written after the first iteration: both processes are training
            assert time.monotonic() < deadline and all(p.poll() is None for p in pair), (tmp_path / "p0.log").read_text()[-3000:]
            time.sleep(0.5)
        pair[1].kill()
        killed = time.monotonic()
        pair[0].wait(timeout=60)
        waited = time.monotonic() - killed
    finally:
        for process in pair:
            process.kill()
    log = (tmp_path / "p0.log").read_text()
    assert pair[0].returncode == 1, log[-3000:]
    lines = [line for line in log.replace("\r", "\n").splitlines() if line.strip()]
    assert lines[-1].startswith("error: process 0 of 2 stopped: another process of the distributed run is gone"), log[-3000:]
    assert "--resume" in lines[-1] and "Traceback" not in log
    print(f"process 0 stopped {waited:.1f} s after process 1 was killed")


def test_the_coordinates_come_from_the_environment_or_a_clear_error():
    given = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4", "JAX_PROCESS_ID": "3"}
    assert distributed_settings(given) == {"coordinator_address": "10.0.0.1:1234", "num_processes": 4, "process_id": 3}
    # a Kubernetes indexed Job's pod index stands in for the process id
    indexed = {**given, "JOB_COMPLETION_INDEX": "2"}
    del indexed["JAX_PROCESS_ID"]
    assert distributed_settings(indexed)["process_id"] == 2
    # under SLURM without a coordinator address, JAX finds it from the job's nodes
    assert distributed_settings({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}) == {}
    slurm = distributed_settings({"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "JAX_COORDINATOR_ADDRESS": "node1:1234"})
    assert slurm == {"coordinator_address": "node1:1234", "num_processes": 2, "process_id": 1}
    for broken, says in (
        ({}, "needs JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID"),
        ({"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234"}, "JAX_NUM_PROCESSES, JAX_PROCESS_ID"),
        ({**given, "JAX_COORDINATOR_ADDRESS": "10.0.0.1"}, "host:port"),
        ({**given, "JAX_NUM_PROCESSES": "four"}, "whole numbers"),
        ({**given, "JAX_PROCESS_ID": "4"}, "0..JAX_NUM_PROCESSES-1"),
    ):
        with pytest.raises(UserError, match=says):
            distributed_settings(broken)


def test_the_train_command_refuses_bad_coordinates_in_one_line(monkeypatch, capsys):
    from metaworld_x.cli import main

    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "127.0.0.1:1")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("JAX_PROCESS_ID", "2")
    assert main(["train", "expert", "stand", "--distributed"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: JAX_PROCESS_ID must be in 0..JAX_NUM_PROCESSES-1")
    assert main(["train", "expert", "stand", "--distributed", "--heartbeat-timeout", "0"]) == 2
    assert "--heartbeat-timeout must be at least 1" in capsys.readouterr().err


def test_a_bad_option_in_a_multi_process_run_is_refused_in_one_line_by_every_process(tmp_path, jax_env):
    # refused before joining the run: no process waits for the others to join, or at JAX's exit
    pair = _pair(tmp_path, jax_env, ["--total-env-steps", str(STEPS), "--eval-every", "-1"])
    for index, process in enumerate(pair):
        try:
            process.wait(timeout=120)
        finally:
            process.kill()
        log = (tmp_path / f"p{index}.log").read_text()
        assert process.returncode == 2, log[-3000:]
        assert log.strip().splitlines()[-1] == "error: --eval-every must be 0 (off) or more iterations, got -1", log[-3000:]
    assert not (tmp_path / "p0").exists() and not (tmp_path / "p1").exists()
