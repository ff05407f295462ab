"""What a scorer returns, the interface every scorer follows, and how scoring falls back.

A scorer reads a rendered frame (or none), a task written in plain language and
the expert catalog, and returns a 0-10 score per expert, the scale the paper's
VLM answers on. The router is supervised by `prior = softmax(scores / T)`.
"""

import unicodedata
import warnings
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from metaworld_x.experts.catalog import ExpertCatalog

MAX_SCORE = 10.0


class PriorFallbackWarning(UserWarning):
    """A scorer could not score a task and returned its fallback instead."""


def scores_to_prior(scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(scores / temperature): [K] scores -> [K] simplex (float64, sums to 1)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    logits = np.asarray(scores, dtype=np.float64) / temperature
    logits = logits - logits.max()
    weights = np.exp(logits)
    return weights / weights.sum()


@dataclass(frozen=True, eq=False)
class ExpertScores:
    """A score per expert and the prior over experts derived from it."""

    names: tuple[str, ...]
    """Expert names, in catalog order."""
    scores: np.ndarray
    """[K] scores in [0, 10]."""
    prior: np.ndarray
    """[K] softmax(scores / temperature); sums to 1."""
    temperature: float
    """The softmax temperature that made `prior`."""
    source: str = ""
    """Which scorer produced this (e.g. `text:all-MiniLM-L6-v2`)."""
    fallback_reason: str | None = None
    """Why the scorer fell back instead of scoring; None when it scored normally."""
    transient: bool = False
    """True when the fallback came from a runtime error; such results are not cached."""

    @classmethod
    def from_scores(cls, names, scores, temperature=1.0, **fields) -> "ExpertScores":
        """Clip scores to [0, 10] and derive the prior."""
        scores = np.clip(np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0), 0.0, MAX_SCORE)
        return cls(tuple(names), scores, scores_to_prior(scores, temperature), float(temperature), **fields)

    @property
    def best(self) -> str:
        """The highest-scoring expert (the first one on ties)."""
        return self.names[int(np.argmax(self.scores))]

    def as_dict(self) -> dict[str, float]:
        """`{name: score}`."""
        return {name: float(score) for name, score in zip(self.names, self.scores)}

    def to_json(self) -> dict:
        return {
            "names": list(self.names),
            "scores": [float(s) for s in self.scores],
            "prior": [float(p) for p in self.prior],
            "temperature": self.temperature,
            "source": self.source,
            "fallback_reason": self.fallback_reason,
            "transient": self.transient,
        }

    @classmethod
    def from_json(cls, payload: dict) -> "ExpertScores":
        return cls(
            tuple(payload["names"]),
            np.asarray(payload["scores"], dtype=np.float64),
            np.asarray(payload["prior"], dtype=np.float64),
            float(payload["temperature"]),
            payload.get("source", ""),
            payload.get("fallback_reason"),
            bool(payload.get("transient", False)),
        )

    def __str__(self) -> str:
        order = np.argsort(-self.scores, kind="stable")
        body = ", ".join(f"{self.names[i]} {self.scores[i]:.1f} ({self.prior[i]:.2f})" for i in order)
        note = f" [fallback: {self.fallback_reason}]" if self.fallback_reason else ""
        return body + note


@dataclass(frozen=True, eq=False)
class SegmentedScores:
    """Scores for each clause of a chained instruction, and for the whole of it."""

    clauses: tuple[str, ...]
    """The instruction split into sub-goals, in the order written."""
    per_clause: tuple[ExpertScores, ...]
    """One result per clause: a per-sub-goal prior."""
    whole: ExpertScores
    """Max over clauses per expert: the same for any order of the clauses."""


@runtime_checkable
class ExpertScorer(Protocol):
    """Scores experts for a task; every backend (and the cache wrapper) follows this."""

    sees_image: bool
    """False for scorers that read the text only; the cache then ignores the frame."""

    def identity(self) -> dict:
        """JSON-able description of everything that changes the answer except the inputs:
        model id and config hash, prompt template, temperature, mode."""
        ...

    def score(self, frame: np.ndarray | None, task: str, experts=None) -> ExpertScores:
        """frame: uint8 [H, W, 3] or None; experts: ExpertCatalog, {name: description} or None."""
        ...


def fallback_scores(
    catalog: ExpertCatalog, reason: str, temperature: float, source: str, transient: bool = False
) -> ExpertScores:
    """All weight on the catalog's default expert, with a warning naming the reason."""
    warnings.warn(
        f"{source}: {reason}; falling back to expert {catalog.default!r}", PriorFallbackWarning, stacklevel=3
    )
    scores = np.zeros(len(catalog))
    scores[catalog.index(catalog.default)] = MAX_SCORE
    return ExpertScores.from_scores(
        catalog.names, scores, temperature, source=source, fallback_reason=reason, transient=transient
    )


def uniform_scores(
    catalog: ExpertCatalog, reason: str, temperature: float, source: str, transient: bool = False
) -> ExpertScores:
    """Equal scores (a uniform prior): the answer when a model's output is unusable."""
    warnings.warn(f"{source}: {reason}; using a uniform prior", PriorFallbackWarning, stacklevel=3)
    scores = np.full(len(catalog), MAX_SCORE / 2)
    return ExpertScores.from_scores(
        catalog.names, scores, temperature, source=source, fallback_reason=reason, transient=transient
    )


def non_latin_ratio(text: str) -> float:
    """Fraction of the letters in `text` that are not Latin script (0 when it has no letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(not unicodedata.name(c, "").startswith("LATIN") for c in letters) / len(letters)


def check_frame(frame) -> np.ndarray | None:
    """Validate a frame: None or uint8 [H, W, 3]."""
    if frame is None:
        return None
    frame = np.asarray(frame)
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[-1] != 3:
        from metaworld_x.errors import UserError

        raise UserError(
            f"a frame must be uint8 [H, W, 3] (as render_for_vlm returns), got {frame.dtype} {list(frame.shape)}"
        )
    return frame
