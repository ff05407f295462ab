"""The expert weights of the last seconds of play, and the moments the dominant expert changed."""

from collections import deque

import numpy as np

from metaworld_x.routing.rollouts import switch_times

HISTORY_SECONDS = 10.0
"""How much of the recent past the live weights plot shows."""


class WeightsHistory:
    """A rolling window of (time, weights) over the last `seconds` of the episode in progress."""

    def __init__(self, num_experts: int, control_dt: float, seconds: float = HISTORY_SECONDS):
        self.num_experts, self.control_dt = num_experts, control_dt
        self._rows: deque = deque(maxlen=max(1, int(round(seconds / control_dt))))

    def clear(self) -> None:
        """Forget everything (a new episode starts its own history)."""
        self._rows.clear()

    def push(self, time: float, weights) -> None:
        """Add the weights [K] used for the step that ended at `time` seconds."""
        weights = np.asarray(weights, np.float64)
        if weights.shape != (self.num_experts,):
            raise ValueError(f"weights of shape {weights.shape}, expected ({self.num_experts},)")
        self._rows.append((float(time), weights))

    def __len__(self) -> int:
        return len(self._rows)

    def window(self) -> tuple[np.ndarray, np.ndarray]:
        """(times [T], weights [T, K]) of the window, oldest first; T = 0 before the first step."""
        if not self._rows:
            return np.zeros(0), np.zeros((0, self.num_experts))
        times, weights = zip(*self._rows)
        return np.asarray(times), np.stack(weights)

    def switch_marks(self) -> list[tuple[float, int]]:
        """[(time s, expert index)] where the dominant expert changed inside the window."""
        return switch_marks(*self.window())


def switch_marks(times: np.ndarray, weights: np.ndarray) -> list[tuple[float, int]]:
    """[(time s, expert index that took over)] of each change of the dominant expert in `weights` [T, K] at `times` [T].

    The first row is no switch: it is where the window opens."""
    if len(times) == 0:
        return []
    # switch_times with a step of 1 gives row indices, which index `times` exactly
    return [(float(times[int(row)]), k) for k, row in switch_times(weights, 1.0)[1:]]
