"""The shipped routers in router/: each one was trained on exactly the installed experts.

A router's output k is expert k of the set it was trained with, identified by its weights' hash. Retraining or
replacing one expert changes that set, and every router must be retrained with it
(`scripts/retrain_routers.sh`); `load_router` refuses the stale ones, and this test makes a forgotten retrain fail
here rather than in a user's `play`.
"""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR

ROUTERS = sorted(p.parent for p in ROUTER_DIR.glob("*/router.json"))


@pytest.fixture(scope="module")
def installed():
    from metaworld_x.routing.experts import ExpertSet
    from metaworld_x.routing.pipeline import installed_experts

    return ExpertSet.load(installed_experts(EXPERTS_DIR))


@pytest.mark.skipif(not ROUTERS, reason="no router is shipped yet (train one with `metaworld-x train router`)")
@pytest.mark.parametrize("folder", ROUTERS, ids=lambda p: p.name)
def test_every_shipped_router_was_trained_on_the_installed_experts(folder, installed):
    from metaworld_x.routing.checkpoint import load_router

    router, params, record = load_router(folder, installed)  # raises, naming the differences, on another set
    metrics = json.loads((folder / "metrics.json").read_text())
    assert [e["name"] for e in metrics["experts"]] == list(installed.names), "metrics.json is from another expert set"
    weights = np.asarray(router.weights(params, jnp.zeros(record["obs_size"]), jnp.asarray(record["text_embedding"])))
    assert weights.shape == (len(installed.names),)
    assert np.all(weights >= 0) and np.isclose(weights.sum(), 1.0, atol=1e-5)
