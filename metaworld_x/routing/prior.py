"""The VLM's prior over experts, checked before it can reach a jitted update.

A VLM scores each expert from 0 to 10; the prior is softmax(scores / T).
Validation happens on the host, where a bad prior can still be reported:

- wrong length (scores for a different expert set): rejected;
- NaN or infinite entries: rejected, naming the experts;
- scores outside 0..10: clipped into range (repaired), with a warning;
- probabilities that are negative: rejected (they are scores or logits, not a
  distribution); probabilities that do not sum to one: renormalised.
"""

import warnings
from typing import Sequence

import numpy as np

from metaworld_x.errors import UserError

MAX_SCORE = 10.0


def _check_shape(values: np.ndarray, expert_names: Sequence[str], what: str) -> None:
    if values.ndim not in (1, 2) or values.shape[-1] != len(expert_names):
        raise UserError(
            f"{what} has shape {values.shape}, but there are {len(expert_names)} experts ({', '.join(expert_names)});"
            " give one entry per expert, in this order ([K] or [B, K])"
        )


def _check_finite(values: np.ndarray, expert_names: Sequence[str], what: str) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        columns = np.flatnonzero(bad.reshape(-1, len(expert_names)).any(axis=0))
        raise UserError(
            f"{what} is not finite for {', '.join(expert_names[i] for i in columns)};"
            " re-run the VLM scoring for these tasks or drop them"
        )


def prior_from_scores(scores, expert_names: Sequence[str], temperature: float = 1.0) -> np.ndarray:
    """VLM scores [K] or [B, K] in 0..10 -> prior probabilities of the same shape (float32)."""
    scores = np.asarray(scores, np.float64)
    _check_shape(scores, expert_names, "the VLM scores")
    _check_finite(scores, expert_names, "the VLM score")
    if scores.min() < 0 or scores.max() > MAX_SCORE:
        warnings.warn(f"VLM scores outside 0..{MAX_SCORE:g} were clipped into range (got {scores.min():.3g}..{scores.max():.3g})")
        scores = np.clip(scores, 0, MAX_SCORE)
    logits = scores / temperature
    logits = logits - logits.max(axis=-1, keepdims=True)
    prior = np.exp(logits)
    return (prior / prior.sum(axis=-1, keepdims=True)).astype(np.float32)


def check_prior(prior, expert_names: Sequence[str]) -> np.ndarray:
    """Validate prior probabilities [K] or [B, K]; returns them renormalised (float32) or raises UserError."""
    prior = np.asarray(prior, np.float64)
    _check_shape(prior, expert_names, "the VLM prior")
    _check_finite(prior, expert_names, "the VLM prior")
    if prior.min() < 0:
        raise UserError(
            f"the VLM prior has negative entries (min {prior.min():.3g}); it must be probabilities —"
            " convert 0..10 scores with prior_from_scores"
        )
    totals = prior.sum(axis=-1, keepdims=True)
    if np.any(totals <= 0):
        raise UserError("the VLM prior is all zeros for some rows; every task needs some probability on some expert")
    return (prior / totals).astype(np.float32)
