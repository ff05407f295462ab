"""Throughput of the environments, printed as one table.

    python scripts/bench_env.py [--worlds 1024] [--seconds 8]

Rows: the walk task on the cpu backend at 1 and 2 threads (env steps/s and
the share of time spent outside `Batch.step`); raw `mujoco.batch` stepping
of the same model with the servo targets the env row's actions map to, the
same sequence of them, each slice starting from the env's simulation state
(measured in slices alternating with the env's, so that both see the same
load on a shared machine, and the raw worlds, which never reset, do not lie
fallen while the env's stand); gymnasium's own
Humanoid-v5; and, on a GPU, the mjx backend at 1k, 8k and 32k worlds
(`--mjx-worlds`) for each MJX implementation, each step waited for before the
clock is read.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np

from metaworld_x.envs import make
from metaworld_x.envs.control_step import prepare_action
from metaworld_x.machine import describe_machine


def timed(run, seconds: float) -> tuple[int, float]:
    """Call run() until `seconds` pass; (calls, elapsed)."""
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run()
        calls += 1
    return calls, time.perf_counter() - start


class CpuEnvRunner:
    """The walk task on the cpu backend, with the time spent inside Batch.step counted."""

    def __init__(self, worlds: int, nthread: int):
        self.env = make("walk", backend="cpu", num_worlds=worlds, nthread=nthread)
        self.worlds, self.frame_skip = worlds, self.env.task.config.frame_skip
        self.rng = np.random.default_rng(0)
        self.actions = self.rng.uniform(-0.3, 0.3, (8, worlds, self.env.action_size)).astype(np.float32)
        self.state = self.env.reset(jax.random.PRNGKey(0))
        self.physics_s = 0.0
        step = self.env.batch.step

        def timed_step(*args, **kwargs):
            t = time.perf_counter()
            step(*args, **kwargs)
            self.physics_s += time.perf_counter() - t

        self.env.batch.step = timed_step  # an instance attribute shadows the method
        for _ in range(500):  # compile and warm up, until a fallen world has reset (its functions compile then)
            self()
            if np.asarray(self.state.done).any():
                break
        self()
        self.physics_s = 0.0

    def __call__(self):
        self.state = self.env.step(self.state, self.actions[self.rng.integers(8)])

    def controls(self) -> np.ndarray:
        """[8, worlds, nu] servo targets the env writes for its 8 action sets (the task's own action map)."""
        action_map = self.env.compiled.action_map
        prepare = jax.vmap(jax.vmap(lambda action: prepare_action(action_map, action)[2]))
        return np.asarray(prepare(jnp.asarray(self.actions)), np.float64)


class RawBatchRunner:
    """mujoco.batch alone on the same model: the env's servo targets, picked in the env's order, frame_skip
    substeps per call."""

    def __init__(self, model: mujoco.MjModel, worlds: int, nthread: int, frame_skip: int, controls: np.ndarray):
        self.batch = mujoco.batch.Batch(model, worlds, nthread)
        self.batch.reset(keyframe=0)
        self.ctrl, self.frame_skip = self.batch.bind("ctrl"), frame_skip
        self.rng = np.random.default_rng(0)  # the env runner's seed: the same sequence of action sets
        self.controls = controls

    def __call__(self):
        self.ctrl[:] = self.controls[self.rng.integers(len(self.controls))]
        self.batch.step(nstep=self.frame_skip)

    def start_from(self, batch: mujoco.batch.Batch) -> None:
        """Continue from another batch's simulations (same model and worlds): its full integration state."""
        self.batch.state[...] = batch.state


def bench_cpu(worlds: int, nthread: int, seconds: float, rounds: int = 4) -> tuple[dict, dict]:
    """The env and raw stepping, measured in alternating slices so both see the same machine load."""
    env = CpuEnvRunner(worlds, nthread)
    raw = RawBatchRunner(env.env.compiled.model, worlds, nthread, env.frame_skip, env.controls())
    raw()
    totals = {"env": [0, 0.0], "raw": [0, 0.0]}
    for _ in range(rounds):
        for name, runner in (("env", env), ("raw", raw)):
            if runner is raw:
                raw.start_from(env.env.batch)
            calls, elapsed = timed(runner, seconds / rounds)
            totals[name][0] += calls
            totals[name][1] += elapsed
    (env_calls, env_s), (raw_calls, raw_s) = totals["env"], totals["raw"]
    env_row = {
        "env_steps": env_calls * worlds / env_s,
        "physics_steps": env_calls * worlds * env.frame_skip / env_s,
        "outside": 1 - env.physics_s / env_s,
    }
    raw_row = {"physics_steps": raw_calls * worlds * env.frame_skip / raw_s, "env_steps": raw_calls * worlds / raw_s}
    return env_row, raw_row, env.frame_skip


def bench_gymnasium_humanoid(seconds: float) -> str | dict:
    try:
        import gymnasium as gym

        env = gym.make("Humanoid-v5")
    except Exception as error:  # gymnasium[mujoco] missing, or its model fails to load
        return f"not available ({type(error).__name__}: {str(error).splitlines()[0][:60]})"
    env.reset(seed=0)

    def run():
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()

    calls, elapsed = timed(run, seconds)
    return {"env_steps": calls / elapsed, "frame_skip": env.unwrapped.frame_skip}


def bench_mjx(worlds: int, impl: str, seconds: float) -> dict:
    env = make("walk", backend="mjx", num_worlds=worlds, impl=impl)
    actions = jax.numpy.zeros((worlds, env.action_size))
    state = env.reset(jax.random.PRNGKey(0))
    start = time.perf_counter()
    state = jax.block_until_ready(env.step(state, actions))
    compile_s = time.perf_counter() - start
    box = {"state": state}

    def run():  # waited for inside the timed call: jax dispatches asynchronously, so the clock would run ahead
        box["state"] = jax.block_until_ready(env.step(box["state"], actions))

    calls, elapsed = timed(run, seconds)
    return {"env_steps": calls * worlds / elapsed, "compile_s": compile_s, "frame_skip": env.task.config.frame_skip}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, default=1024, help="worlds for the cpu rows")
    parser.add_argument("--seconds", type=float, default=8.0, help="measuring time per row")
    parser.add_argument("--mjx-only", action="store_true", help="only the mjx rows (on a GPU machine)")
    parser.add_argument("--mjx-worlds", type=int, nargs="+", default=[1024, 8192, 32768],
                        help="world counts for the mjx rows (GPU only; each compiles once)")
    args = parser.parse_args()

    rows = []  # (what, env steps/s, physics steps/s, note)
    raw_rows = []
    for nthread in () if args.mjx_only else (1, 2):
        env_row, raw_row, frame_skip = bench_cpu(args.worlds, nthread, args.seconds)
        share = env_row["env_steps"] / raw_row["env_steps"]
        rows.append((f"cpu backend, walk, {args.worlds} worlds, {nthread} thread(s)", env_row["env_steps"],
                     env_row["physics_steps"], f"{100 * env_row['outside']:.1f}% of time outside Batch.step;"
                     f" {100 * share:.0f}% of raw"))
        raw_rows.append((f"raw mujoco.batch, same model, the env's ctrl, {nthread} thread(s)", raw_row["env_steps"],
                         raw_row["physics_steps"], f"env steps/s = physics steps/s / frame_skip {frame_skip}"))
    rows += raw_rows
    r = "skipped (--mjx-only)" if args.mjx_only else bench_gymnasium_humanoid(args.seconds)
    if isinstance(r, str):
        rows.append(("gymnasium Humanoid-v5, one env", None, None, r))
    else:
        rows.append(("gymnasium Humanoid-v5, one env", r["env_steps"], r["env_steps"] * r["frame_skip"],
                     f"its frame_skip is {r['frame_skip']}"))
    if jax.default_backend() == "gpu":
        from metaworld_x.envs.mjx_env import warp_available

        impls = ["jax"] + (["warp"] if warp_available() else [])
        for impl in impls:
            for worlds in args.mjx_worlds:
                try:
                    r = bench_mjx(worlds, impl, args.seconds)
                    rows.append((f"mjx backend ({impl}), walk, {worlds} worlds", r["env_steps"],
                                 r["env_steps"] * r["frame_skip"], f"compile {r['compile_s']:.0f} s"))
                except Exception as error:  # e.g. out of memory at 32k
                    rows.append((f"mjx backend ({impl}), walk, {worlds} worlds", None, None,
                                 f"failed: {type(error).__name__}"))
    else:
        rows.append(("mjx backend", None, None, f"skipped: jax backend is {jax.default_backend()}, not gpu"))

    print(f"# Environment throughput: {describe_machine()}, mujoco {mujoco.__version__}")
    print("| what | env steps/s | physics steps/s | note |")
    print("|---|---:|---:|---|")
    for what, env_steps, physics_steps, note in rows:
        fmt = lambda x: "n/a" if x is None else f"{x:,.0f}"
        print(f"| {what} | {fmt(env_steps)} | {fmt(physics_steps)} | {note} |")


if __name__ == "__main__":
    main()
