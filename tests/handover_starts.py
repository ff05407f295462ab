"""The handover starts of an expert's training task: episodes that begin in another expert's clip."""

import jax

from metaworld_x.envs.compiled import CompiledTask
from metaworld_x.envs.reference import frame_at


def handover_starts(task, seeds: int = 8) -> list[tuple[dict, object, object]]:
    """(info, physics state, the handing-over clip's frame at the handover) of each of the first `seeds` resets that
    started as a handover; the other resets are left out."""
    home = CompiledTask.build(task).statics.home
    starts = []
    for seed in range(seeds):
        key = jax.random.PRNGKey(seed)
        info = task.reset_info(key)
        state = task.reset_physics(key, home, info)
        if float(info["handover_time"]) >= 0:
            starts.append((info, state, frame_at(task.handover_reference, 0, float(info["handover_time"]))))
    return starts
