"""Router inference for one robot on the CPU, as one table, side by side with the goal.

    python scripts/bench_router_inference.py [--task stand | --task all] [--calls 2000] [--plans 50]

Rows, all with a shipped router (router/<task>/, every installed expert, K as shipped) and one robot:
- the router network alone: jitted `Router.weights` on device arrays, after warm-up (goal: at most 1 ms);
- the control step the router drives, physics excluded: the router's weights from a numpy observation, every
  expert's policy on its own observation, the mixture, and the action back in numpy, as `run_episodes` does;
- one MPPI plan (`eval router --plan mppi`, MppiConfig's defaults) in the router's shipped world model, from the
  router's logits to the executed weights in numpy: what `--plan mppi` adds to a control step when it replans.
Times are wall clock per call (median and 90th percentile). The expert observations are zeros of each expert's
input size: no physics runs, and none of these networks' costs depends on the values.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # "on the CPU", on a GPU machine too

import time
from dataclasses import dataclass
from pathlib import Path

import tyro


@dataclass(frozen=True)
class Args:
    task: str = "stand"
    """The shipped router to time (a folder in router/; `all` for the one router of all tasks)."""
    of_task: str | None = None
    """With --task all: the task whose instruction embedding it reads; default its first."""
    calls: int = 2000
    """Timed calls for the router and the control step, after warm-up."""
    plans: int = 50
    """Timed MPPI plans, after warm-up; 0 leaves the row out."""
    router_dir: Path | None = None
    """Where the routers are; default router/."""
    experts_dir: Path | None = None
    """Where the experts are installed; default experts/."""


def timed(call, count: int, warmup: int = 20) -> dict:
    """Median and 90th percentile of `count` calls of call() in µs, after `warmup` untimed ones."""
    import numpy as np

    for _ in range(warmup):
        call()
    times = np.empty(count)
    for i in range(count):
        start = time.perf_counter()
        call()
        times[i] = time.perf_counter() - start
    return {"median_us": float(np.median(times) * 1e6), "p90_us": float(np.percentile(times, 90) * 1e6), "calls": count}


def main(args: Args) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from metaworld_x.envs.task import TaskConfig
    from metaworld_x.errors import UserError
    from metaworld_x.machine import describe_machine
    from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR
    from metaworld_x.routing.all_tasks import is_one_router, task_view
    from metaworld_x.routing.checkpoint import load_router, trained_experts
    from metaworld_x.routing.evaluation import shipped_world_model
    from metaworld_x.experts.installed import ExpertSet
    from metaworld_x.routing.network import mixture_action
    from metaworld_x.routing.planner import MppiConfig
    from metaworld_x.routing.rollouts import expert_actions, planned_behaviour, router_behaviour

    if args.calls < 1 or args.plans < 0:
        raise UserError(f"--calls must be at least 1 and --plans at least 0, got {args.calls} and {args.plans}")
    load = os.getloadavg()[0]
    folder = (args.router_dir or ROUTER_DIR) / args.task
    experts = ExpertSet.load(trained_experts(folder, args.experts_dir or EXPERTS_DIR))
    router, params, record = load_router(folder, experts)
    if is_one_router(record):
        record = task_view(record, args.of_task or next(iter(record["tasks"])), folder)
    text = np.asarray(record["text_embedding"], np.float32)[None]  # [1, text]
    obs = np.asarray(params.obs_mean, np.float32)[None]  # [1, obs]: one robot

    weights_fn = jax.jit(router.weights)
    obs_device, text_device = jax.device_put(obs), jax.device_put(text)
    network = timed(lambda: weights_fn(params, obs_device, text_device).block_until_ready(), args.calls)

    behaviour = router_behaviour(router, params, text[0])
    expert_obs = tuple(jnp.zeros((1,) + p.obs_mean.shape, jnp.float32) for p in experts.params)
    gains = np.ones(router.num_experts, np.float32)
    mix = jax.jit(mixture_action)

    def control_step():
        weights = behaviour(obs, 0, None)
        return np.asarray(mix(jnp.asarray(weights), expert_actions(experts.params, expert_obs, gains)))

    step = timed(control_step, args.calls)

    control_period_ms = TaskConfig().frame_skip * 0.002 * 1000  # the MuJoCo timestep the scenes share
    rows = [
        ("router network alone (jitted, device arrays in and out)", network, "≤ 1 ms"),
        (f"control step: router + {router.num_experts} experts' policies + mixing, numpy in and out (no physics)",
         step, f"< control period {control_period_ms:.0f} ms"),
    ]
    if args.plans:
        config = MppiConfig()
        model, wm_params = shipped_world_model(folder)
        planned = planned_behaviour(router, params, text[0], model, wm_params, config)
        key = jax.random.PRNGKey(0)
        plan = timed(lambda: planned(obs, 0, key), args.plans, warmup=3)
        what = (f"one MPPI plan: horizon {config.horizon}, {config.samples} samples, {config.iterations} iterations"
                " (router logits + encode + plan)")
        rows.append((what, plan, f"< control period {control_period_ms:.0f} ms"))

    print(f"# Router inference, one robot on the CPU: {describe_machine()}; load average {load:.1f} at start")
    print(f"router/{args.task}: K = {router.num_experts} experts ({', '.join(router.expert_names)}),"
          f" MLP {router.obs_size} + {router.text_size} → {' → '.join(map(str, router.config.hidden))} → {router.num_experts}")
    print("| what | median µs | p90 µs | calls | goal |")
    print("|---|---:|---:|---:|---|")
    for what, r, goal in rows:
        print(f"| {what} | {r['median_us']:,.0f} | {r['p90_us']:,.0f} | {r['calls']} | {goal} |")


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__))
