"""VLM supervision for the router: a 0-10 score per expert and a prior over experts.

Backends: `TextEncoderPrior` (offline default; reads the task text only) and
`TransformersVLM` (any transformers image-text-to-text model, on a rendered
frame). `CachedScorer` keeps labels on disk. Importing this package imports
neither torch, transformers nor mujoco; the backends load them when built.
"""

from metaworld_x.vlm.cache import CachedScorer, default_cache_dir
from metaworld_x.vlm.factory import make_scorer, score_task
from metaworld_x.vlm.frames import render_for_vlm
from metaworld_x.vlm.scores import (
    ExpertScorer,
    ExpertScores,
    PriorFallbackWarning,
    SegmentedScores,
    scores_to_prior,
)
from metaworld_x.vlm.text_prior import TextEncoderPrior, split_clauses
from metaworld_x.vlm.transformers_backend import TransformersVLM, parse_scores

__all__ = [
    "CachedScorer",
    "ExpertScorer",
    "ExpertScores",
    "PriorFallbackWarning",
    "SegmentedScores",
    "TextEncoderPrior",
    "TransformersVLM",
    "default_cache_dir",
    "make_scorer",
    "parse_scores",
    "render_for_vlm",
    "score_task",
    "scores_to_prior",
    "split_clauses",
]
