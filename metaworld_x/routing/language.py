"""From a plain-language instruction to a composite task: scene, task and success criterion.

The instruction is matched to the catalog's task descriptions by the offline
text encoder (all-MiniLM-L6-v2; metaworld_x.vlm.text_prior). A task's score
is the mean of two cosine similarities, each a max over the task's canonical
instruction and its paraphrases:

- the whole instruction against them, and
- the mean, over the instruction's clauses (split at commas, "and", "then"),
  of each clause's best match: a set of clauses has no order, so
  "carry the box to the table after you pick it up" and "pick up the box and
  carry it to the table" score alike.

The best-scoring task wins. An empty instruction, one the English-only
encoder cannot read (mostly non-Latin script), or one no task matches above
`min_score` falls back to DEFAULT_TASK with a warning that says why.
"""

import functools
import warnings
from dataclasses import dataclass

import numpy as np

from metaworld_x.errors import UserError
from metaworld_x.vlm.scores import PriorFallbackWarning, non_latin_ratio
from metaworld_x.vlm.text_prior import split_clauses

DEFAULT_TASK = "stand"
"""What an unreadable instruction falls back to: standing still is safe in every scene."""


@dataclass(frozen=True)
class CompositeTask:
    """One task the router can be asked for."""

    name: str
    """Catalog key, also the router's folder name under router/."""
    task: str
    """The environment task (metaworld_x.envs.tasks.TASKS) whose scene, reward and success it uses."""
    instruction: str
    """The canonical instruction."""
    paraphrases: tuple[str, ...]
    """Other wordings the text encoder matches too."""
    success: str
    """The success criterion, in words (the task's `success` decides it)."""

    @property
    def scene(self) -> str:
        """The scene's name; a sequence's scene is its props, named by them."""
        from metaworld_x.envs.tasks import TASKS

        scene = TASKS[self.task].scene
        return scene if isinstance(scene, str) else "+".join(p.prop for p in scene)

    @property
    def texts(self) -> tuple[str, ...]:
        return (self.instruction, *self.paraphrases)

    @property
    def sequential(self) -> bool:
        """Whether it chains skills (a Sequence task with sub-goals)."""
        from metaworld_x.envs.tasks import TASKS

        return bool(getattr(TASKS[self.task], "subgoals", ()))


CATALOG: tuple[CompositeTask, ...] = (
    CompositeTask(
        "fetch", "fetch", "walk to the box, pick it up and carry it to the table",
        ("bring the box over to the table", "pick the package up off the floor and put it on the table",
         "go to the box, lift it and deliver it to the table"),
        "all four sub-goals reached in order: approach, lift (10 cm), transport (within 30 cm of the table), place",
    ),
    CompositeTask(
        "push", "push", "push the box onto the red marker",
        ("shove the box until it is on the red mark", "slide the crate across the table top to the marker"),
        "the box within the push task's success distance of the marker",
    ),
    CompositeTask(
        "door", "door", "walk to the door, push it open and walk through",
        ("open the door and go through the doorway", "go to the door, open it and pass through it"),
        "the door hinge past its open angle and the robot beyond the doorway",
    ),
    CompositeTask(
        "sit", "sit", "sit down on the chair",
        ("take a seat on the chair", "have a seat", "sit on the chair behind you"),
        "episode return >= 750 per 1000 steps (HumanoidBench's bar): seated at the chair's height, upright, still",
    ),
    CompositeTask(
        "stand", "stand", "stand still",
        ("stay where you are and keep your balance", "stand upright on the spot", "don't move"),
        "episode return >= 800 per 1000 steps (HumanoidBench's bar): tall, upright and still",
    ),
    CompositeTask(
        "run", "run", "run forward",
        ("sprint straight ahead", "run as fast as you can", "jog forwards quickly"),
        "episode return >= 700 per 1000 steps (HumanoidBench's bar, target speed 5 m/s)",
    ),
    CompositeTask(
        "crawl", "crawl", "crawl through the tunnel",
        ("get down low and crawl under the roof", "crawl forward on all fours through the low passage"),
        "episode return >= 700 per 1000 steps (HumanoidBench's bar): head and pelvis low, moving forward, inside the tunnel",
    ),
    CompositeTask(
        "reach", "reach", "reach for the target with your right hand",
        ("touch the target with your right hand", "put your right hand on the ball", "reach out and touch the sphere"),
        "a hand within the reach task's success distance of the target",
    ),
    # Sequential tasks: no expert is trained on any of them; each sub-goal is one expert's skill (envs/tasks/chains.py).
    CompositeTask(
        "walk_sit", "walk_sit", "walk to the chair and sit down",
        ("go over to the chair and take a seat", "head to the chair, then sit on it"),
        "in order: arrive 0.3 m before the chair (2.8 m ahead, facing the robot), turn round, seated for 0.5 s",
    ),
    CompositeTask(
        "run_crawl", "run_crawl", "run to the tunnel and crawl through it",
        ("sprint to the tunnel, then crawl under the roof", "dash over to the tunnel and crawl through"),
        "in order: arrive 1.5 m before the tunnel (4.5 m ahead), out of the tunnel's far end",
    ),
    CompositeTask(
        "walk_reach", "walk_reach", "walk to the target and touch it with your right hand",
        ("head to the ball and put your right hand on it", "go over to the sphere and touch it with your right hand"),
        "in order: arrive where the reach clip's hand meets the target (2.6 m ahead), the right hand within 5 cm",
    ),
    CompositeTask(
        "rise_walk", "rise_walk", "get up from the chair and walk forward 3 m",
        ("stand up from the seat, then walk 3 metres forward", "rise from the chair and walk 3 m ahead"),
        "in order (starting seated): standing for 0.5 s, the pelvis 3 m ahead of the chair's front",
    ),
    CompositeTask(
        "walk_push", "walk_push", "walk to the table and push the box onto the marker",
        ("go to the table, then shove the crate onto the red marker", "head over to the table and push the box onto the red mark"),
        "in order: arrive 0.85 m before the table's centre (2.85 m ahead), the box within 10 cm of the marker",
    ),
    CompositeTask(
        "door_sit", "door_sit", "open the door, walk through and sit on the chair beyond it",
        ("push the door open, go through and sit down on the chair past it",
         "open the door, go through the doorway and take a seat on the chair beyond"),
        "in order: the door open and the robot through, arrive 0.3 m before the chair beyond, turn round, seated",
    ),
)
TASK_NAMES = tuple(t.name for t in CATALOG)


def composite_task(name: str) -> CompositeTask:
    """The catalog entry called `name`."""
    for entry in CATALOG:
        if entry.name == name:
            return entry
    raise UserError(f"unknown composite task {name!r}; tasks: {', '.join(TASK_NAMES)}")


@dataclass(frozen=True)
class Resolution:
    """What an instruction was matched to, and how sure the match is."""

    instruction: str
    task: CompositeTask
    scores: dict
    """{task name: score} (empty when the instruction was not encoded)."""
    fallback_reason: str | None = None


@functools.lru_cache(maxsize=1)
def _packaged_encoder():
    """One loaded all-MiniLM-L6-v2 per process (loading takes seconds)."""
    from metaworld_x.vlm.text_prior import TextEncoderPrior

    return TextEncoderPrior()


class TaskResolver:
    """Matches instructions to the catalog with the packaged sentence encoder (loaded on first use)."""

    def __init__(self, encoder=None, min_score: float = 0.35, max_non_latin: float = 0.5):
        """encoder: anything with `_embed(list[str]) -> [N, D] unit vectors` (default: the offline text prior's)."""
        self._encoder = encoder
        self.min_score, self.max_non_latin = float(min_score), float(max_non_latin)
        self._catalog = None
        self._matcher = None

    @property
    def encoder(self):
        if self._encoder is None:
            self._encoder = _packaged_encoder()
        return self._encoder

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.encoder._embed(list(texts)), np.float64)

    def _catalog_embeddings(self):
        if self._catalog is None:
            texts = [text for entry in CATALOG for text in entry.texts]
            owner = np.asarray([i for i, entry in enumerate(CATALOG) for _ in entry.texts])
            self._catalog = (self.embed(texts), owner)
        return self._catalog

    def _per_task(self, embeddings: np.ndarray) -> np.ndarray:
        """[N, D] -> [N, tasks] best cosine against each task's texts."""
        catalog, owner = self._catalog_embeddings()
        cosine = embeddings @ catalog.T
        return np.stack([cosine[:, owner == k].max(axis=1) for k in range(len(CATALOG))], axis=1)

    def _problem(self, instruction) -> str | None:
        if not isinstance(instruction, str) or not instruction.strip():
            return "empty instruction"
        ratio = non_latin_ratio(instruction)
        if ratio > self.max_non_latin:
            return f"instruction is {ratio:.0%} non-Latin script, which the English-only text encoder cannot read"
        if not split_clauses(instruction):
            return "instruction has no words"
        return None

    def sequence(self, instruction: str) -> CompositeTask | None:
        """The catalog's sequential task whose sub-goals (kind and skill, in order) `instruction` composes to, if any
        (`instructions.compose`): "sit on the chair after you walk to it" is walk_sit in another order. The
        catalog's name of one ("walk_sit") is that task too."""
        from metaworld_x.envs.tasks import TASKS
        from metaworld_x.routing.instructions import SkillMatcher, compose

        named = next((entry for entry in CATALOG if entry.sequential and entry.name == instruction.strip()), None)
        if named is not None:
            return named

        if self._matcher is None:
            self._matcher = SkillMatcher(self.encoder)
        try:
            composed = compose(instruction, self._matcher)
        except UserError:
            return None
        wanted = [(g.kind, g.skill) for g in composed.subgoals]
        return next((entry for entry in CATALOG if entry.sequential
                     and [(g.kind, g.skill) for g in TASKS[entry.task].subgoals] == wanted), None)

    def resolve(self, instruction: str) -> Resolution:
        """The composite task for `instruction`; falls back to DEFAULT_TASK with a PriorFallbackWarning.

        A sequential task is chosen by the sub-goals the instruction composes to (`sequence`), the others by text
        similarity: the sequences share their clauses' words with the single-skill tasks ("run to the tunnel and
        crawl through it" with "crawl through the tunnel"), so similarity alone cannot tell them apart."""
        problem = self._problem(instruction)
        scores = {}
        if problem is None:
            sequence = self.sequence(instruction)
            if sequence is not None:
                return Resolution(instruction, sequence, {sequence.name: 1.0})
            clauses = list(split_clauses(instruction))
            similarity = self._per_task(self.embed([instruction, *clauses]))
            combined = 0.5 * similarity[0] + 0.5 * similarity[1:].mean(axis=0)
            combined = np.where([entry.sequential for entry in CATALOG], -np.inf, combined)
            scores = {entry.name: float(s) for entry, s in zip(CATALOG, combined) if not entry.sequential}
            best = int(np.argmax(combined))
            if combined[best] >= self.min_score:
                return Resolution(instruction, CATALOG[best], scores)
            problem = f"no task matches it (best {CATALOG[best].name} at {combined[best]:.2f} < {self.min_score})"
        fallback = composite_task(DEFAULT_TASK)
        reason = f"{problem}: {str(instruction)[:60]!r}; falling back to {DEFAULT_TASK!r} ({fallback.instruction})"
        warnings.warn(reason, PriorFallbackWarning, stacklevel=2)
        return Resolution(str(instruction), fallback, scores, reason)
