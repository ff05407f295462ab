"""The shipped expert library in experts/: each expert meets the goals its metrics.json records, checked
against a fresh evaluation; and the spec rules that keep those goals honest.

Apart from tests/test_expert_training.py (training, resume, shipping on tiny runs) because these evaluations are
the slowest part of the suite: a file of their own lets `pytest -n 2` run them beside everything else.
"""

import json

import numpy as np
import pytest

from metaworld_x.expert_specs import EXPERTS
from metaworld_x.expert_training import evaluate_expert
from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")

# Experts shipped although they miss a goal, with why; listed in the experts' model cards too.
BELOW_GOAL: dict[str, str] = {}


# How many of ten episodes a recount on another machine may count differently (see below).
MACHINE_SPREAD = 2


@pytest.mark.parametrize("skill", sorted(EXPERTS))
def test_every_shipped_expert_meets_its_recorded_metrics(skill):
    directory = EXPERTS_DIR / skill
    if not (directory / "metrics.json").is_file():
        pytest.skip(f"expert {skill!r} is not shipped yet (train it with `metaworld-x train expert {skill}`)")
    recorded = json.loads((directory / "metrics.json").read_text())
    fresh = evaluate_expert(directory, seed=recorded["seed"])
    # A closed-loop rollout amplifies last-bit float differences between machines: walk's return was 416.65 on
    # one machine against 416.16 recorded (0.12 %). A marginal expert's episodes flip: carry, recorded at 7/10
    # from its clip and 10/10 from home on an AMD EPYC, scored 8/10 and 8/10 (return +2.9 %) on an Intel Xeon on
    # 2 Dec 2026, with the same weights, code and libraries. Another machine is in effect another draw of ten
    # episodes, whose count spreads by about one (binomial, p = 0.8-0.9), so a recount may differ by two. The
    # goals below are checked on this fresh evaluation, strictly: they are the real test.
    assert abs(fresh["success"] - recorded["success"]) <= MACHINE_SPREAD
    assert fresh["task_return"] == pytest.approx(recorded["task_return"], rel=5e-2)
    # from_home, from_handover (stand) and from_start (experts that cannot start from home) exist only in newer
    # metrics
    for starts in ("from_home", "from_handover", "from_start"):
        if recorded.get(starts) is not None:
            assert abs(fresh[starts]["success"] - recorded[starts]["success"]) <= MACHINE_SPREAD, starts
    assert np.isfinite(fresh["tracking_error_m"]) and np.isfinite(fresh["task_return"])
    missed = EXPERTS[skill].shortfalls(fresh)
    if skill in BELOW_GOAL:  # test_below_goal_list_names_only_experts_that_miss keeps this list honest
        pytest.xfail(f"{skill} is shipped below its goals ({BELOW_GOAL[skill]}): {'; '.join(missed)}")
    assert not missed, f"shipped expert {skill} misses its goals: {'; '.join(missed)}"


@pytest.mark.parametrize("skill", sorted(EXPERTS))
def test_every_shipped_expert_was_evaluated_on_the_clips_in_the_library(skill):
    """A rebuilt clip changes what its expert sees at every frame (the phase is time / duration), so its recorded
    figures no longer hold: crawl_get_down lengthened from 21 s to 25 s, its first 21 s unchanged, moved the
    shipped crawl expert from 0/10 to 3/10 from home. metrics.json names the clip versions it was measured on."""
    from metaworld_x.envs.expert import expert_task
    from metaworld_x.envs.tasks.tracking import clip_fingerprints

    directory = EXPERTS_DIR / skill
    if not (directory / "metrics.json").is_file():
        pytest.skip(f"expert {skill!r} is not shipped yet (train it with `metaworld-x train expert {skill}`)")
    recorded = json.loads((directory / "metrics.json").read_text()).get("clips", {})
    current = clip_fingerprints(expert_task(EXPERTS[skill]).config)
    changed = sorted(name for name in current if recorded.get(name) != current[name])
    assert not changed, (
        f"{skill} was evaluated on other versions of the clips {changed} than assets/motions holds: fine-tune it "
        f"on them (`metaworld-x train expert {skill} --init-from experts/{skill}`) or rebuild the clips as they were"
    )


def test_below_goal_list_names_only_experts_that_miss():
    """A shipped expert listed in BELOW_GOAL must really miss a goal, so the list cannot go stale."""
    for skill, reason in BELOW_GOAL.items():
        directory = EXPERTS_DIR / skill
        if not (directory / "metrics.json").is_file():
            continue
        recorded = json.loads((directory / "metrics.json").read_text())
        assert EXPERTS[skill].shortfalls(recorded), f"{skill} now meets its goals: remove it from BELOW_GOAL"


# Specs that do not charge an early end as a deviation for ever, with why.
UNCHARGED: dict[str, str] = {}


@pytest.mark.parametrize("skill", sorted(EXPERTS))
def test_every_spec_charges_an_early_end_as_its_deviation_limit_for_ever(skill):
    """Without the charge the tracking cost makes ending an episode the cheapest way out: walk, sit and stand trained
    from scratch learned to end their clip episodes within 16-77 steps. A failure is charged as
    never getting back, that is as the deviation that ends the episode, so the charge follows the spec's limit."""
    from metaworld_x.envs.expert import expert_task

    spec = EXPERTS[skill]
    charge = spec.ppo.constraint.failure_error
    if skill in UNCHARGED:
        assert charge == 0.0, f"{skill} now charges failures: remove it from UNCHARGED"
        return
    if spec.ppo.constraint.mode == "fixed":
        pytest.skip(f"{skill} trains with fixed weights, which have no tracking cost to escape")
    limit = expert_task(spec).config.max_deviation
    assert charge == pytest.approx(limit), (
        f"{skill} charges an early end as {charge} m of tracking error, not its deviation limit {limit} m")


@pytest.mark.parametrize("skill", [s for s, spec in EXPERTS.items() if spec.objective])
def test_no_objective_reward_term_outweighs_the_imitation_reward(skill):
    """Inside a tracking task no term of the objective may be larger than the whole imitation reward (at most 1 a
    step): push's HumanoidBench bonus of 1000, paid once where success ends the episode, was paid at every step on
    the marker under tracking (which does not end on it), and its first run learned nothing else."""
    from dataclasses import asdict

    from metaworld_x.envs.expert import expert_task

    scales = asdict(expert_task(EXPERTS[skill]).objective.config.rewards)
    too_big = {name: scale for name, scale in scales.items() if abs(scale) > 1.0}
    assert not too_big, f"{skill}: objective reward scales {too_big} outweigh the imitation reward; override them in its spec"


def test_a_prop_expert_that_fails_its_whole_task_from_the_first_frame_misses_its_goal():
    """Late starts of a prop task begin partly done (past the door), so success there alone is not enough."""
    spec = EXPERTS["door"]
    on_clip = {"success": 10, "episodes": 10, "tracking_error_m": 0.03, "task_return_per_1000_steps": 850.0}
    assert spec.shortfalls({**on_clip, "from_start": {"success": 9, "episodes": 10}}) == []
    missed = spec.shortfalls({**on_clip, "from_start": {"success": 5, "episodes": 10}})
    assert missed == ["success from the clip's first frame 5/10 < 9/10"]
