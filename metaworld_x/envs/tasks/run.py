"""Run: walk's task at 5 m/s (HumanoidBench's h1-run)."""

from dataclasses import dataclass

from metaworld_x.envs.tasks.walk import Walk, WalkConfig


@dataclass(frozen=True)
class RunConfig(WalkConfig):
    target_speed: float = 5.0
    """Forward speed (m/s) at and above which the speed factor is 1."""


@dataclass(frozen=True)
class Run(Walk):
    """Run forward along +x at `config.target_speed` (5 m/s) or faster.

    Success: the episode return reaches HumanoidBench's bar of 700.
    """

    name = "run"
    Config = RunConfig
