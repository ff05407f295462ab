"""The shipped expert library in experts/: each expert meets the goals its metrics.json records, checked
against a fresh evaluation; and the spec rules that keep those goals honest.

Apart from tests/experts/test_expert_training.py (training, resume, shipping on tiny runs) because these evaluations are
the slowest part of the suite: a file of their own lets `pytest -n 2` run them beside everything else.
"""

import json

import numpy as np
import pytest
from scipy.stats import binom, fisher_exact

from metaworld_x.experts.specs import EXPERTS
from metaworld_x.experts.training import evaluate_expert
from metaworld_x.paths import EXPERTS_DIR, MOTIONS_DIR

pytestmark = pytest.mark.skipif(not (MOTIONS_DIR / "walk.npz").is_file(), reason="the shipped clip library is missing")

# Experts shipped although they miss a goal, with why; listed in the experts' model cards too.
BELOW_GOAL: dict[str, str] = {}


# The goal check's statistics (`test_every_shipped_expert_meets_its_recorded_metrics`). An evaluation on another
# machine than the one that wrote metrics.json is in effect another draw of episodes: a closed-loop rollout
# amplifies last-bit float differences, and carry, recorded at 7/10 from its clip on an AMD EPYC, scored 8/10 on an
# Intel Xeon with the same weights, code and libraries.
FALSE_FAILURE = 1e-3
"""The most often the test may fail a good library on any machine, all experts and all their checks together."""
CHECKS_PER_EXPERT = 5
"""Binomial checks per expert at most: the success goal on the clip and from its first frame, and the recount
against metrics.json on the clip and two other start kinds."""
ALPHA = FALSE_FAILURE / (len(EXPERTS) * CHECKS_PER_EXPERT)
"""Each check's false-failure rate (Bonferroni: their sum is FALSE_FAILURE)."""
MORE_EPISODES = 50
"""Episodes added (at the next seed) where the first ten miss a success goal: with 40 and twelve experts' share of
FALSE_FAILURE each, an expert at 60 % would pass one time in five."""
CHECKABLE_RATE = 0.95
"""A goal of 10/10 is checked as a rate of at least this: no finite evaluation can confirm a rate of 100 %."""


def goal_rate(success_goal: int) -> float:
    """The true success rate a goal of `success_goal` of 10 episodes stands for."""
    return min(success_goal / 10, CHECKABLE_RATE)


def refutes(successes: int, episodes: int, rate: float, alpha: float = ALPHA) -> bool:
    """Whether `successes` of `episodes` show, at confidence 1 - alpha, a true success rate below `rate` (one-sided
    exact binomial test: as few successes or fewer have probability at most alpha at that rate)."""
    return float(binom.cdf(successes, episodes, rate)) <= alpha


def failure_probability(success_goal: int, rate: float) -> float:
    """How often the goal check fails an expert whose true success rate is `rate`: the first ten episodes miss the
    goal and those ten with MORE_EPISODES more refute the goal rate."""
    total = 10 + MORE_EPISODES
    highest_refuted = max((k for k in range(total + 1) if refutes(k, total, goal_rate(success_goal))), default=-1)
    return float(sum(binom.pmf(first, 10, rate) * binom.cdf(highest_refuted - first, MORE_EPISODES, rate)
                     for first in range(success_goal)))


@pytest.mark.parametrize("success_goal", [9, 10])
def test_the_goal_check_fails_a_good_expert_rarely_and_a_poor_one_almost_always(success_goal):
    """Exact probabilities of the goal check's two stages, the figures stated in the check's docstring."""
    rate = goal_rate(success_goal)
    for at_or_above in np.linspace(rate, 1.0, 6):
        assert failure_probability(success_goal, at_or_above) <= ALPHA
    assert failure_probability(success_goal, 0.5) >= 0.98
    assert failure_probability(success_goal, 0.6) >= 0.87
    # carry's rate of about 94 %: the strict recount of ten failed it on 12 % of machines
    assert binom.cdf(success_goal - 1, 10, 0.94) > 0.1 and failure_probability(9, 0.94) < 1e-6


@pytest.mark.parametrize("skill", sorted(EXPERTS))
def test_every_shipped_expert_meets_its_recorded_metrics(skill):
    """A fresh evaluation of ten episodes at the recorded seed meets the expert's goals, and agrees with its
    metrics.json.

    Success counts are checked statistically, since another machine draws other episodes. A count that meets
    its goal on the first ten episodes passes (as a strict recount did); one that misses is given MORE_EPISODES
    more, and fails only where all of them refute the goal rate (`goal_rate`: 9/10 is 90 %, 10/10 is 95 %) at
    confidence 1 - ALPHA. Each recount must agree with metrics.json's by Fisher's exact test at the same ALPHA.
    Confidence: a library whose experts all have their goal rates fails with probability below FALSE_FAILURE (1 in
    1000) on any machine, all experts and checks together; an expert at 50 % fails with probability at least
    98 %, at 60 % at least 87 %, at 70 % about 50 % against 9/10 and 92 % against 10/10
    (`test_the_goal_check_fails_a_good_expert_rarely_and_a_poor_one_almost_always`). A first draw that meets its
    goals costs what the strict recount did; the extra episodes run only after a miss. The tracking error and the
    task return are means over the first ten episodes, checked against their goals and the record as before.
    """
    directory = EXPERTS_DIR / skill
    if not (directory / "metrics.json").is_file():
        pytest.skip(f"expert {skill!r} is not shipped yet (train it with `metaworld-x train expert {skill}`)")
    spec = EXPERTS[skill]
    recorded = json.loads((directory / "metrics.json").read_text())
    fresh = evaluate_expert(directory, seed=recorded["seed"])
    more = {}

    def counts(starts: str) -> tuple[int, int]:
        """(successes, episodes) from `starts` ("clip" or a key of the metrics), over every episode run so far."""
        runs = [fresh, *more.values()]
        parts = [run if starts == "clip" else run[starts] for run in runs]
        return sum(p["success"] for p in parts), sum(p["episodes"] for p in parts)

    missed = []
    for starts in ("clip", "from_start"):
        first = fresh if starts == "clip" else fresh.get(starts)
        if first is None or first["success"] >= spec.success_goal * first["episodes"] / 10:
            continue
        if not more:
            more["next seed"] = evaluate_expert(directory, seed=recorded["seed"] + 1, episodes=MORE_EPISODES)
        successes, episodes = counts(starts)
        if refutes(successes, episodes, goal_rate(spec.success_goal)):
            missed.append(f"success {'on the clip' if starts == 'clip' else 'from the first frame'} {successes}/"
                          f"{episodes}, below a rate of {goal_rate(spec.success_goal):.0%} at confidence {1 - ALPHA}")
    # the goals on means (tracking error, task return), strictly, as shortfalls with the success goals met
    missed += spec.shortfalls({**fresh, "success": fresh["episodes"], "from_start": None})
    for starts in ("clip", "from_home", "from_handover", "from_start"):
        before = recorded if starts == "clip" else recorded.get(starts)
        if before is None:  # from_home, from_handover and from_start exist only for some experts, in newer metrics
            continue
        successes, episodes = counts(starts)
        table = [[before["success"], before["episodes"] - before["success"]], [successes, episodes - successes]]
        assert fisher_exact(table)[1] > ALPHA, (
            f"{skill} {starts}: {successes}/{episodes} now against {before['success']}/{before['episodes']} in its"
            " metrics.json; re-evaluate it (`metaworld-x eval expert`) and ship its figures")
    assert fresh["task_return"] == pytest.approx(recorded["task_return"], rel=5e-2)
    assert np.isfinite(fresh["tracking_error_m"]) and np.isfinite(fresh["task_return"])
    if skill in BELOW_GOAL:  # test_below_goal_list_names_only_experts_that_miss keeps this list honest
        pytest.xfail(f"{skill} is shipped below its goals ({BELOW_GOAL[skill]}): {'; '.join(missed)}")
    assert not missed, f"shipped expert {skill} misses its goals: {'; '.join(missed)}"


@pytest.mark.parametrize("skill", sorted(EXPERTS))
def test_every_shipped_expert_was_evaluated_on_the_clips_in_the_library(skill):
    """A rebuilt clip changes what its expert sees at every frame (the phase is time / duration), so its recorded
    figures no longer hold: crawl_get_down lengthened from 21 s to 25 s, its first 21 s unchanged, moved the
    shipped crawl expert from 0/10 to 3/10 from home. metrics.json names the clip versions it was measured on."""
    from metaworld_x.experts.environment import expert_task
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
    from metaworld_x.experts.environment import expert_task

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

    from metaworld_x.experts.environment import expert_task

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
