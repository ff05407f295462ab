"""A replay buffer of whole episodes, sampled as windows that stay inside one episode.

Storage is flat and circular, one row per observation. An episode of T
transitions takes T + 1 rows: row t holds obs_t and the transition out of it
(cond_t, reward_t, terminated_t); the episode's last row holds only its final
observation (`last`). A window of H steps starting at row i is valid when rows
i..i+H belong to one episode and none of rows i..i+H-1 is a last row, so no
sample ever crosses an episode boundary. When full, the oldest rows are
overwritten; what remains of a partly overwritten episode stays usable.
"""

import json
from pathlib import Path

import numpy as np

from metaworld_x.atomic import atomic_path
from metaworld_x.errors import UserError

FORMAT_VERSION = 1


class ReplayBuffer:
    """Transition sequences (obs, cond, reward, terminated) grouped by episode."""

    def __init__(self, capacity: int, obs_size: int, cond_size: int, cond_kind: str = "action"):
        if capacity <= 1 or obs_size <= 0 or cond_size <= 0:
            raise UserError(f"replay buffer needs capacity > 1 and positive sizes, got {capacity}, {obs_size}, {cond_size}")
        self.capacity, self.obs_size, self.cond_size, self.cond_kind = capacity, obs_size, cond_size, cond_kind
        self.obs = np.zeros((capacity, obs_size), np.float32)
        self.cond = np.zeros((capacity, cond_size), np.float32)
        self.reward = np.zeros(capacity, np.float32)
        self.terminated = np.zeros(capacity, bool)
        self.last = np.zeros(capacity, bool)
        self.episode = np.full(capacity, -1, np.int64)
        self.cursor = 0
        self.size = 0
        self.next_episode = 0
        self._valid_cache: dict[int, np.ndarray] = {}

    @property
    def num_transitions(self) -> int:
        return int(np.sum((self.episode >= 0) & ~self.last))

    def add_episode(self, obs, cond, reward, terminated: bool = False) -> None:
        """Add one episode: obs [T+1, obs], cond [T, cond], reward [T]; terminated: whether it ended by termination (not a time limit)."""
        obs, cond, reward = (np.asarray(x, np.float32) for x in (obs, cond, reward))
        steps = reward.shape[0] if reward.ndim == 1 else -1
        if steps < 1 or obs.shape != (steps + 1, self.obs_size) or cond.shape != (steps, self.cond_size):
            raise UserError(
                f"an episode needs obs [T+1, {self.obs_size}], cond [T, {self.cond_size}] and reward [T] with T >= 1;"
                f" got obs {obs.shape}, cond {cond.shape}, reward {reward.shape}"
            )
        if steps + 1 > self.capacity:
            raise UserError(f"an episode of {steps} steps does not fit a buffer of capacity {self.capacity}; raise the capacity")
        for name, x in (("obs", obs), ("cond", cond), ("reward", reward)):
            if not np.all(np.isfinite(x)):
                raise UserError(f"episode {self.next_episode} has non-finite {name}; it was not added")
        rows = (self.cursor + np.arange(steps + 1)) % self.capacity
        self.obs[rows] = obs
        self.cond[rows[:-1]], self.cond[rows[-1]] = cond, 0
        self.reward[rows[:-1]], self.reward[rows[-1]] = reward, 0
        self.terminated[rows] = False
        self.terminated[rows[-2]] = bool(terminated)
        self.last[rows] = False
        self.last[rows[-1]] = True
        self.episode[rows] = self.next_episode
        self.next_episode += 1
        self.cursor = int((rows[-1] + 1) % self.capacity)
        self.size = min(self.capacity, self.size + steps + 1)
        self._valid_cache.clear()

    def add_rollout(self, obs, cond, reward, next_obs, done, terminated) -> None:
        """Add a batched rollout from auto-resetting simulations, all [T, B, ...].

        obs_t, cond_t, reward_t, next_obs_t (the observation before any reset),
        done_t (the episode ended after step t) and terminated_t (it ended by
        termination). Each simulation is cut at its done steps and at the end
        of the rollout; the pieces are stored as separate episodes.
        """
        obs, cond, next_obs = (np.asarray(x, np.float32) for x in (obs, cond, next_obs))
        reward, done, terminated = np.asarray(reward, np.float32), np.asarray(done, bool), np.asarray(terminated, bool)
        steps, count = reward.shape
        for b in range(count):
            start = 0
            for t in range(steps):
                if done[t, b] or t == steps - 1:
                    piece = slice(start, t + 1)
                    self.add_episode(
                        np.concatenate([obs[piece, b], next_obs[t : t + 1, b]]),
                        cond[piece, b], reward[piece, b], terminated=bool(terminated[t, b]),
                    )
                    start = t + 1

    def valid_starts(self, horizon: int) -> np.ndarray:
        """Rows where a window of `horizon` steps fits inside one episode."""
        if horizon not in self._valid_cache:
            rows = np.arange(self.capacity)
            ok = self.episode >= 0
            for j in range(horizon + 1):
                ahead = (rows + j) % self.capacity
                ok &= self.episode[ahead] == self.episode
                if j < horizon:
                    ok &= ~self.last[ahead]
            self._valid_cache[horizon] = np.flatnonzero(ok)
        return self._valid_cache[horizon]

    def sample(self, batch_size: int, horizon: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Random windows: obs [B, H+1, obs], cond [B, H, cond], reward [B, H], terminated [B, H]."""
        starts = self.valid_starts(horizon)
        if starts.size == 0:
            raise UserError(
                f"no stored episode has {horizon} transitions left in the buffer;"
                f" collect longer episodes or lower the horizon (stored: {self.num_transitions} transitions)"
            )
        return self._windows(rng.choice(starts, size=batch_size), horizon)

    def sequences(self, length: int, max_count: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Up to max_count distinct windows of `length` steps, for evaluation; same layout as sample()."""
        starts = self.valid_starts(length)
        if starts.size == 0:
            raise UserError(f"no stored episode has {length} consecutive transitions; collect longer episodes or ask for shorter sequences")
        chosen = rng.choice(starts, size=min(max_count, starts.size), replace=False)
        return self._windows(chosen, length)

    def _windows(self, starts: np.ndarray, horizon: int) -> dict[str, np.ndarray]:
        rows = (starts[:, None] + np.arange(horizon + 1)) % self.capacity
        steps = rows[:, :-1]
        return {
            "obs": self.obs[rows],
            "cond": self.cond[steps],
            "reward": self.reward[steps],
            "terminated": self.terminated[steps].astype(np.float32),
            "episode": self.episode[rows],
        }

    def obs_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation (floored at 1e-3) of the stored observations."""
        stored = self.obs[self.episode >= 0]
        if stored.shape[0] == 0:
            raise UserError("the replay buffer is empty; add episodes before training")
        return stored.mean(0), np.maximum(stored.std(0), 1e-3)

    def save(self, path: Path) -> Path:
        """Write an .npz atomically (a temporary file, then a rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Rows are written in order from 0 until the buffer wraps, so the first `size` rows are all the data.
        used = slice(0, self.size)
        meta = {
            "format_version": FORMAT_VERSION, "capacity": self.capacity, "obs_size": self.obs_size,
            "cond_size": self.cond_size, "cond_kind": self.cond_kind, "cursor": self.cursor,
            "size": self.size, "next_episode": self.next_episode,
        }
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(
                f, meta=np.array(json.dumps(meta)), obs=self.obs[used], cond=self.cond[used], reward=self.reward[used],
                terminated=self.terminated[used], last=self.last[used], episode=self.episode[used],
            )
        return path

    @classmethod
    def load(cls, path: Path) -> "ReplayBuffer":
        path = Path(path)
        try:
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                arrays = {k: data[k] for k in ("obs", "cond", "reward", "terminated", "last", "episode")}
        except (OSError, KeyError, ValueError) as error:
            raise UserError(f"cannot read replay buffer {path} ({error}); it is missing or not a buffer file") from None
        if meta.get("format_version") != FORMAT_VERSION:
            raise UserError(f"replay buffer {path} has format {meta.get('format_version')}, expected {FORMAT_VERSION}")
        buffer = cls(meta["capacity"], meta["obs_size"], meta["cond_size"], meta["cond_kind"])
        size = meta["size"]
        for name, value in arrays.items():
            getattr(buffer, name)[:size] = value
        buffer.cursor, buffer.size, buffer.next_episode = meta["cursor"], size, meta["next_episode"]
        return buffer
