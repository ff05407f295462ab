"""Training throughput against collection with the same policy, as one table.

    python scripts/bench_train.py [--backend cpu|mjx] [--skill walk] [--envs 1024] [--minibatches 8]
                                  [--iterations 4] [--brax | --brax-python VENV/bin/python] [--brax-envs N]

Rows, all on the same backend and model (the skill's tracking task):
- the bare environment stepped with random actions (for reference only: random actions fall and reset more
  often than a policy's, so it is not the work training does);
- collection with the policy (what a PPO iteration spends on experience), timed inside the same iterations
  as the next row, so both step the same policies;
- whole PPO iterations (collection + update), compile excluded;
and the ratio of training to collection throughput (goal: at least 70%).
With `--brax`, the same run starts `bench_brax_ppo.py` in this interpreter
(brax's own `ppo.train` on the same task through MJX, with jax 0.10's removed
`device_put_replicated` put back) and puts its throughput in the table with
the ratio to ours at the same number of worlds: where `--brax-envs` differs
from `--envs` (MJX on a CPU is slow), ours is trained at that size as well
and both sizes are printed. `--brax-python` runs it in another environment
instead, for example one with `jax==0.9.2`, brax and this package
(`pip install -e . --no-deps`), where brax runs unaided.
"""

import argparse
import os
import subprocess
import sys
import time
from dataclasses import replace

import jax
import numpy as np


def bench_bare(env, steps: int, max_warmup: int = 500) -> float:
    """Env steps/s under random actions, timed after the first reset of a fallen world (whose functions compile
    then), so that no compilation is timed."""
    rng = np.random.default_rng(0)
    state = env.reset(jax.random.PRNGKey(0))
    random_actions = lambda: rng.uniform(-0.5, 0.5, (env.num_envs, env.action_size)).astype(np.float32)  # noqa: E731
    for _ in range(max_warmup):
        state = env.step(state, random_actions())
        if np.asarray(state.done).any():
            break
    state = env.step(state, random_actions())
    jax.block_until_ready(state.obs)
    actions = [random_actions() for _ in range(steps)]
    start = time.perf_counter()
    for action in actions:
        state = env.step(state, action)
    jax.block_until_ready(state.obs)
    return env.num_envs * steps / (time.perf_counter() - start)


def bench_ours(spec, task, backend: str, envs: int, iterations: int) -> dict:
    """Our PPO at `envs` worlds for `iterations` steady iterations (the first, which compiles, is dropped):
    collection and whole-iteration steps/s, and seconds per update, from the same iterations."""
    from metaworld_x.experts.environment import make_env
    from metaworld_x.experts.training import TrainerEnv
    from metaworld_x.training.config import RunOptions
    from metaworld_x.training.train import make_train

    config = replace(spec.ppo, num_envs=envs, total_env_steps=envs * spec.ppo.unroll_length * (iterations + 1),
                     eval_every=0, checkpoint_every=0)
    make = lambda n: TrainerEnv(make_env(task, n, backend), backend)  # noqa: E731
    steady = make_train(config, make, RunOptions(progress=False))(jax.random.PRNGKey(0)).history[1:]
    return {
        "config": config,
        "collect": float(np.mean([config.steps_per_iteration / h["perf/collect_s"] for h in steady])),
        "whole": float(np.mean([h["perf/steps_per_second"] for h in steady])),
        "update_s": float(np.mean([h["perf/update_s"] for h in steady])),
    }


def bench_brax(python: str, skill: str, envs: int, minibatches: int, iterations: int) -> float:
    """brax ppo.train's steady steps/s, from bench_brax_ppo.py run by `python`."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_brax_ppo.py")
    result = subprocess.run([python, script, "--skill", skill, "--envs", str(envs), "--minibatches", str(minibatches),
                             "--iterations", str(iterations)], capture_output=True, text=True, check=False)
    for line in result.stdout.splitlines():
        if line.startswith("brax_ppo_steps_per_second"):
            return float(line.split()[1])
    sys.exit(f"bench_brax_ppo.py under {python} failed:\n{result.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cpu", choices=("cpu", "mjx"))
    parser.add_argument("--skill", default="walk")
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--minibatches", type=int, help="minibatches per epoch (default: the spec's)")
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--brax", action="store_true", help="also time brax's ppo.train, in this interpreter")
    parser.add_argument("--brax-python", help="also time brax's ppo.train, run by this other python (e.g. a jax 0.9 venv's)")
    parser.add_argument("--brax-envs", type=int, help="worlds for brax's run (default: --envs; MJX on a CPU is slow)")
    args = parser.parse_args()
    backend = args.backend

    from metaworld_x.experts.environment import expert_task, make_env
    from metaworld_x.experts.specs import expert_spec
    from metaworld_x.experts.training import TrainerEnv
    from metaworld_x.machine import describe_machine

    overrides = {"num_minibatches": args.minibatches} if args.minibatches else {}
    spec = expert_spec(args.skill, num_envs=args.envs, backend=backend, **overrides)
    task = expert_task(spec)
    bare = bench_bare(TrainerEnv(make_env(task, args.envs, backend), backend), 30)
    ours = bench_ours(spec, task, backend, args.envs, args.iterations)
    config = ours["config"]

    print(f"machine: {describe_machine()}")
    print(f"task: {args.skill} tracking, {args.envs} worlds, unroll {config.unroll_length}, "
          f"{config.num_minibatches} minibatches x {config.num_epochs} epochs")
    print()
    print("| what | env steps/s | share of collection |")
    print("|---|---|---|")
    print(f"| bare environment ({backend} backend, random actions; not the same work) | {bare:,.0f} |"
          f" {bare / ours['collect']:.0%} |")
    _print_ours(ours, args.envs)
    where = "this GPU" if jax.default_backend() == "gpu" else "this CPU"
    brax_python = args.brax_python or (sys.executable if args.brax else None)
    if brax_python is None:
        print(f"| brax ppo.train, MJX on {where} | not measured: run with --brax | |")
        return
    brax_envs = args.brax_envs or args.envs
    if brax_envs != args.envs:  # brax is compared with ours at its own size only
        ours = bench_ours(spec, task, backend, brax_envs, args.iterations)
        _print_ours(ours, brax_envs)
    brax = bench_brax(brax_python, args.skill, brax_envs, config.num_minibatches, args.iterations + 1)
    print(f"| brax ppo.train, MJX-JAX on {where}, {brax_envs} worlds, same task and PPO settings"
          f" | {brax:,.0f} | ours at {brax_envs} worlds trains {ours['whole'] / brax:.2f}x as fast |")


def _print_ours(ours: dict, envs: int) -> None:
    print(f"| collection with the policy, {envs} worlds | {ours['collect']:,.0f} | 100% |")
    print(f"| PPO training, collection + update, {envs} worlds ({ours['update_s']:.2f} s per update) |"
          f" {ours['whole']:,.0f} | {ours['whole'] / ours['collect']:.0%} (goal ≥ 70%) |",
          flush=True)  # before brax's run, which may not finish in a short lease


if __name__ == "__main__":
    main()
