"""The scripted baseline: a state machine that runs, in each phase of a sequence, the expert of its sub-goal alone.

It switches experts exactly when the task reports a sub-goal reached, so it
measures what chaining the experts gives with no learning at all: the honest
baseline for a router. It is a baseline only; nothing is trained on it.
"""

import numpy as np

from metaworld_x.envs.tasks.sequence import MAX_SUBGOALS, Sequence
from metaworld_x.errors import UserError

PHASE_SLICE = slice(-(MAX_SUBGOALS + 1 + 3), -3)
"""Where a sequence's phase one-hot sits in its observation (`Sequence.features`: phase, then a point [3])."""


def phase_of(obs: np.ndarray) -> np.ndarray:
    """[B] the number of sub-goals reached, read from router observations [B, obs] of a sequence."""
    return np.argmax(np.asarray(obs)[:, PHASE_SLICE], axis=-1)


def missing_skills(task: Sequence, expert_names) -> list[str]:
    """The skills `task`'s sub-goals need that are not among `expert_names`, in order."""
    return list(dict.fromkeys(g.skill for g in task.subgoals if g.skill not in expert_names))


def expert_order(task: Sequence, expert_names) -> np.ndarray:
    """[P] the index in `expert_names` of each sub-goal's expert; a UserError names any that is not installed."""
    if not isinstance(task, Sequence):
        raise UserError(f"the scripted baseline chains a sequence's sub-goals; {task.name!r} has none")
    names = tuple(expert_names)
    missing = missing_skills(task, names)
    if missing:
        raise UserError(f"{task.name} needs the expert(s) {', '.join(missing)}, which are not installed"
                        f" (installed: {', '.join(names)}); train them with `metaworld-x train expert {missing[0]}`")
    return np.asarray([names.index(g.skill) for g in task.subgoals])


def scripted_behaviour(task: Sequence, expert_names):
    """A Behaviour: world b runs the expert of its current sub-goal alone (after the last, the last one's)."""
    order = expert_order(task, expert_names)
    one_hot = np.eye(len(expert_names), dtype=np.float32)

    def choose(obs, t, key):
        phase = np.minimum(phase_of(obs), len(order) - 1)
        return one_hot[order[phase]]

    return choose


def scripted_weights(task: Sequence, expert_names):
    """(state [B, obs], text) -> weights [B, K]: `scripted_behaviour` as a jax function, for `play`'s controller
    (the text is not read: the state machine follows the task's sub-goals)."""
    import jax.numpy as jnp

    order = jnp.asarray(expert_order(task, expert_names))
    one_hot = jnp.eye(len(expert_names), dtype=jnp.float32)

    def weights(state, text):
        phase = jnp.minimum(jnp.argmax(state[:, PHASE_SLICE], axis=-1), order.size - 1)
        return one_hot[order[phase]]

    return weights
