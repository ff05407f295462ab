"""Solver and contact settings laid over a task's model, the same on both backends.

MuJoCo Playground's recipe for speed on a GPU: fewer constraint-solver iterations, and contacts only where the
task needs them (a walker's feet on the floor; not its shins against the chair). `PhysicsOptions` applies them
to the compiled MjModel before either backend is built from it, so the C engine and MJX step the same physics.
The default changes nothing.
"""

from dataclasses import dataclass

import mujoco
import numpy as np

from metaworld_x.errors import UserError

FEET_AND_HANDS = ("left_foot", "right_foot", "left_hand", "right_hand")


@dataclass(frozen=True)
class PhysicsOptions:
    """What `apply` changes in a model; None keeps the model's own setting."""

    iterations: int | None = None
    """Constraint-solver iterations per physics step."""
    ls_iterations: int | None = None
    """Line-search iterations within each solver iteration."""
    colliding: tuple[str, ...] | None = None
    """The robot geoms that touch the floor and props; the robot's other geoms touch nothing."""

    def __post_init__(self):
        for name in ("iterations", "ls_iterations"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"{name} must be at least 1 (or None for the model's), got {value}")
        if self.colliding is not None and not self.colliding:
            raise UserError("colliding names no geom; name the robot geoms that touch the world, or None for all")

    def apply(self, model: mujoco.MjModel) -> mujoco.MjModel:
        """Set the options in `model` (in place, before a backend copies it) and return it."""
        if self.iterations is not None:
            model.opt.iterations = self.iterations
        if self.ls_iterations is not None:
            model.opt.ls_iterations = self.ls_iterations
        if self.colliding is not None:
            keep = [_geom_id(model, name) for name in self.colliding]
            robot = model.body_rootid[model.geom_bodyid[keep[0]]]
            others = set(np.flatnonzero(model.body_rootid[model.geom_bodyid] == robot)) - set(keep)
            for geom in sorted(others):
                model.geom_contype[geom] = model.geom_conaffinity[geom] = 0
        return model


def _geom_id(model: mujoco.MjModel, name: str) -> int:
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
    if geom < 0:
        raise UserError(f"colliding names {name!r}, which is no geom of the model; the H1's are e.g. {', '.join(FEET_AND_HANDS)}")
    return geom


LEAN = PhysicsOptions(iterations=4, ls_iterations=6, colliding=FEET_AND_HANDS)
"""The GPU-speed set for tasks on the feet and hands alone (stand, walk, run, reach): a few solver iterations,
contacts at the feet and hands only."""
