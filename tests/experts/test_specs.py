"""Expert specs: their settings are checked against the configs they override when the spec is made."""

import pytest

from metaworld_x.errors import UserError
from metaworld_x.experts.specs import EXPERTS, ExpertSpec, installed_spec
from metaworld_x.paths import EXPERTS_DIR


@pytest.mark.parametrize(("settings", "named"), [
    ({"tracking": {"home_start_fractoin": 0.3}}, "home_start_fractoin for TrackingConfig"),
    ({"tracking": {"rewards": {"stnad": 1.0}}}, "stnad for TrackingRewards"),
    ({"objective_overrides": {"target_sped": 1.0}}, "target_sped for WalkConfig"),
    ({"objective": "juggle"}, "unknown objective task 'juggle'"),
    ({"objective": None, "objective_overrides": {"target_speed": 1.0}}, "objective settings without an objective task"),
])
def test_a_misspelt_setting_fails_when_the_spec_is_made(settings, named):
    arguments = {"objective": "walk", **settings}
    with pytest.raises(UserError, match=f"expert spec 'hop': .*{named}"):
        ExpertSpec("hop", "a hop", ("walk",), **arguments)


def test_every_library_spec_and_every_shipped_spec_json_reads_back():
    assert set(EXPERTS) >= {"stand", "walk", "run", "sit", "rise", "turn", "crawl", "push", "door", "carry"}
    for folder in sorted(p for p in EXPERTS_DIR.iterdir() if (p / "spec.json").is_file()):
        assert installed_spec(folder.name, EXPERTS_DIR).skill == folder.name
