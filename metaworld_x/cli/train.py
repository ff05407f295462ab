"""`metaworld-x train expert SKILL`: train one expert from its spec and ship it."""

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro


@dataclass(frozen=True)
class Train:
    """Train an expert with imitation-constrained PPO (spec in metaworld_x/expert_specs.py) and ship it to experts/."""

    what: tyro.conf.Positional[Literal["expert"]]
    """What to train."""
    skill: tyro.conf.Positional[str]
    """Expert skill: stand, walk, run, sit, crawl, reach_one_hand, reach_two_hands, carry, push, door."""
    total_env_steps: int | None = None
    """Override the spec's step budget (e.g. for a short trial run)."""
    num_envs: int | None = None
    """Override the number of parallel simulations."""
    backend: Literal["cpu", "mjx"] | None = None
    """Physics backend; default: the spec's (cpu: mujoco.batch; mjx: GPU)."""
    run_dir: Path | None = None
    """Checkpoints, metrics, TensorBoard and curve; default runs/<skill>."""
    resume: bool = False
    """Continue from the newest checkpoint in run_dir."""
    seed: int | None = None
    """Override the spec's seed."""
    out: Path | None = None
    """Where to ship the trained expert; default experts/<skill>."""
    ship: bool = True
    """Export, evaluate and ship the expert when training ends."""
    distributed: bool = False
    """Join a multi-host run through jax.distributed.initialize() before anything else."""

    def run(self) -> None:
        if self.distributed:
            from metaworld_x.training.devices import initialize_distributed

            initialize_distributed()
        from metaworld_x.expert_specs import expert_spec
        from metaworld_x.expert_training import ship_expert, train_expert

        overrides = {
            k: v for k, v in (("total_env_steps", self.total_env_steps), ("num_envs", self.num_envs),
                              ("backend", self.backend), ("seed", self.seed)) if v is not None
        }
        spec = expert_spec(self.skill, **overrides)
        run_dir = self.run_dir or Path("runs") / self.skill
        result = train_expert(spec, run_dir, resume=self.resume)
        print(f"trained {self.skill}: {int(result.state.env_steps)} environment steps; run in {run_dir}")
        if result.rollbacks:
            print(f"{len(result.rollbacks)} non-finite update(s) rolled back; see {run_dir}")
        if self.ship:
            path = ship_expert(spec, result, self.out)
            print(f"shipped to {path}")
