"""Atomic writes: the target holds the old content or the new, never part of it, and no temporary file is left."""

import pytest

from metaworld_x.atomic import atomic_path, write_bytes, write_text


def test_a_finished_write_replaces_the_file_and_makes_its_folder(tmp_path):
    target = tmp_path / "new" / "folder" / "metrics.json"
    write_text(target, '{"a": 1}')
    assert target.read_text() == '{"a": 1}'
    write_bytes(target, b'{"a": 2}')
    assert target.read_text() == '{"a": 2}'
    assert [p.name for p in target.parent.iterdir()] == ["metrics.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing_behind(tmp_path):
    target = tmp_path / "policy.msgpack"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"half of the n")
            raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["policy.msgpack"]


def test_the_temporary_file_keeps_the_suffix_that_writers_choose_a_format_by(tmp_path):
    with atomic_path(tmp_path / "curve.png") as tmp:
        assert tmp.suffix == ".png" and tmp.parent == tmp_path and tmp.name.startswith(".")
        tmp.write_bytes(b"png")
    assert (tmp_path / "curve.png").read_bytes() == b"png"


def test_a_figure_is_written_as_a_png_and_closed(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from metaworld_x.atomic import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "plots" / "curve.png", dpi=50)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number), "the figure is closed"
    assert [p.name for p in path.parent.iterdir()] == ["curve.png"]


def _folder(path, text):
    path.mkdir()
    (path / "policy.json").write_text(text)
    return path


def test_a_staged_folder_replaces_the_old_one_whole_and_nothing_is_left_beside_it(tmp_path):
    from metaworld_x.atomic import replace_folder

    final = _folder(tmp_path / "walk", "old")
    replace_folder(_folder(tmp_path / ".walk.staging", "new"), final)
    assert (final / "policy.json").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["walk"]
    replace_folder(_folder(tmp_path / ".walk.staging", "first"), tmp_path / "run")  # nothing there before
    assert (tmp_path / "run" / "policy.json").read_text() == "first"


def test_a_swap_killed_between_its_renames_leaves_the_old_folder_aside_and_the_next_swap_clears_it(tmp_path, monkeypatch):
    import os

    from metaworld_x import atomic

    final = _folder(tmp_path / "walk", "old")
    renames = []

    def killed_after_the_first(source, target):
        if renames:
            raise KeyboardInterrupt("killed")
        renames.append((source, target))
        os.rename(source, target)

    monkeypatch.setattr(atomic.os, "replace", killed_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        atomic.replace_folder(_folder(tmp_path / ".walk.staging", "new"), final)
    monkeypatch.undo()
    # the old expert survives whole beside the target and the staged one is untouched: nothing is half-written
    assert (tmp_path / ".walk.old" / "policy.json").read_text() == "old"
    assert (tmp_path / ".walk.staging" / "policy.json").read_text() == "new"
    atomic.replace_folder(tmp_path / ".walk.staging", final)
    assert (final / "policy.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk"]
