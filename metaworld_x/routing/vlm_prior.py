"""The router's prior over experts: the scorer its config chooses, on the scene's start, through the label cache.

The default scorer is the packaged text encoder (all-MiniLM-L6-v2): it reads
the instruction and the expert descriptions only and sees no image. With
`RouterConfig.vlm`, a transformers image-text-to-text model scores the
experts on a frame of the scene as every episode starts (its home keyframe,
seen from the `track` camera), rendered headless.

Every label goes through `CachedScorer`, keyed by the scorer's identity
(model, config hash, prompt, settings), the instruction, the expert catalog
and, for a scorer that sees images, the frame: a second training of the same
task reads the label from disk and does not run the model again.

A VLM that answers badly or fails gives its fallback prior with a
`PriorFallbackWarning` (metaworld_x.vlm.scores), and training goes on; so
does a frame that cannot be rendered (no OpenGL context): the VLM then reads
the text alone, and the record says so.
"""

import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.routing.config import RouterConfig
from metaworld_x.routing.prior import prior_from_scores

FRAME_CAMERA = "track"
"""The camera a VLM sees the start through: it follows the robot, as in every GIF and snapshot."""
FRAME_SIZE = (224, 224)
"""(height, width) of the frame: the input size most small VLMs are trained at."""


@dataclass(frozen=True)
class ScoredPrior:
    """The prior the router is supervised by, and what made it."""

    prior: np.ndarray
    """[K] float32 on the simplex, in the catalog's order."""
    source: str
    """The scorer's short name, e.g. `text:all-MiniLM-L6-v2` or `vlm:SmolVLM-256M-Instruct`."""
    record: dict
    """What router.json keeps: the scorer's identity, the frame it saw, the cache key, any fallback."""


def prior_scorer(config: RouterConfig, cache_dir: str | Path | None = None, text_encoder=None):
    """The scorer `config.vlm` chooses, wrapped in the label cache at `cache_dir` (None: `default_cache_dir()`).

    text_encoder: an already loaded `TextEncoderPrior` to reuse for the default (the task resolver's), so that
    the encoder is not loaded twice. A `vlm` that cannot be loaded is a UserError: it is named by the user.
    """
    from metaworld_x.vlm.cache import CachedScorer
    from metaworld_x.vlm.factory import make_scorer

    if config.vlm is None:
        scorer = text_encoder if text_encoder is not None else make_scorer("text", cache_dir=False)
    else:
        scorer = make_scorer(
            "transformers", config.vlm, cache_dir=False, trust_remote_code=config.vlm_trust_remote_code
        )
    return CachedScorer(scorer, cache_dir)


def start_frame(scene, camera: str = FRAME_CAMERA, size: tuple[int, int] = FRAME_SIZE) -> np.ndarray:
    """uint8 [height, width, 3]: `scene` (any Task) at its home keyframe, where every episode starts before reset noise.

    The keyframe is deterministic, so the same task gives the same frame and the same cache key on every run.
    """
    import mujoco

    from metaworld_x.vlm.frames import render_for_vlm

    model = scene.build_model()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    return render_for_vlm(model, data, camera=camera, size=size)


def _record(scorer, result, frame: np.ndarray | None, key: str, frame_error: str | None) -> dict:
    from metaworld_x.vlm.cache import frame_digest

    identity = dict(scorer.identity())
    prompts = identity.pop("prompts", None)
    if prompts is not None:  # the templates are long; their hash says whether two priors were asked alike
        identity["prompt_sha256"] = hashlib.sha256(json.dumps(prompts).encode()).hexdigest()
    frame_record = None
    if frame is not None:
        frame_record = {"camera": FRAME_CAMERA, "height": int(frame.shape[0]), "width": int(frame.shape[1]),
                        "pose": "home keyframe", "sha256": frame_digest(frame)}
    return {"source": result.source, "sees_image": bool(scorer.sees_image), **identity, "frame": frame_record,
            "frame_error": frame_error, "cache_key": key, "fallback_reason": result.fallback_reason}


def score_prior(scorer, instruction: str, catalog, scene, temperature: float = 1.0) -> ScoredPrior:
    """Score the experts of `catalog` for `instruction` in `scene`, and derive the prior softmax(scores / temperature).

    scorer: a `CachedScorer` (`prior_scorer`); the start frame is rendered only when it sees images.
    """
    from metaworld_x.vlm.scores import PriorFallbackWarning

    frame, frame_error = None, None
    if scorer.sees_image:
        try:
            frame = start_frame(scene)
        except UserError as error:  # no OpenGL context: a label from the text beats no training
            frame_error = str(error)
            warnings.warn(f"{scorer.source}: cannot render the start frame ({error}); scoring the text alone",
                          PriorFallbackWarning, stacklevel=2)
    result = scorer.score(frame, instruction, catalog)
    # Scores do not depend on the scorer's own temperature; the router's config sets the prior's.
    prior = prior_from_scores(result.scores, catalog.names, temperature)
    record = _record(scorer, result, frame, scorer.key(frame, instruction, catalog), frame_error)
    return ScoredPrior(prior, result.source, record)
