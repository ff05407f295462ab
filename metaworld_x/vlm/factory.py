"""Build a scorer by name, and score one task: the entry points for the CLI and training."""

import functools
from pathlib import Path

from metaworld_x.errors import UserError

KINDS = ("text", "transformers")


def make_scorer(
    kind: str = "text",
    model: str | Path | None = None,
    *,
    temperature: float = 1.0,
    cache_dir: str | Path | None | bool = None,
    device: str = "cpu",
    **options,
):
    """A scorer: kind="text" (TextEncoderPrior, offline default) or "transformers" (TransformersVLM).

    model: text: a sentence-transformers folder (None: the packaged
    all-MiniLM-L6-v2); transformers: a local folder or hub id (required).
    cache_dir: False for no cache; None for the default cache folder; else a folder.
    options: passed to the backend (e.g. mode=, min_similarity=, trust_remote_code=).
    """
    if kind == "text":
        from metaworld_x.vlm.text_prior import TextEncoderPrior

        scorer = TextEncoderPrior(model, temperature=temperature, device=device, **options)
    elif kind == "transformers":
        if model is None:
            raise UserError(
                "kind='transformers' needs model= a local folder or hub id of an image-text-to-text model"
                " (e.g. HuggingFaceTB/SmolVLM-256M-Instruct)"
            )
        from metaworld_x.vlm.transformers_backend import TransformersVLM

        scorer = TransformersVLM(model, temperature=temperature, device=device, **options)
    else:
        raise UserError(f"unknown scorer kind {kind!r}; choose one of {', '.join(KINDS)}")
    if cache_dir is False:
        return scorer
    from metaworld_x.vlm.cache import CachedScorer

    return CachedScorer(scorer, None if cache_dir in (None, True) else cache_dir)


@functools.lru_cache(maxsize=4)
def _shared_scorer(kind: str, model, temperature: float, cache_dir, device: str):
    return make_scorer(kind, model, temperature=temperature, cache_dir=cache_dir, device=device)


def score_task(
    task: str,
    frame=None,
    *,
    kind: str = "text",
    model: str | Path | None = None,
    experts=None,
    temperature: float = 1.0,
    cache_dir: str | Path | None | bool = None,
    device: str = "cpu",
):
    """Score one task; the scorer is built once per setting and reused across calls."""
    scorer = _shared_scorer(kind, None if model is None else str(model), temperature, cache_dir, device)
    return scorer.score(frame, task, experts)
