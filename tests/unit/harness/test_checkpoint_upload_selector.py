"""checkpoint.upload's selector is Determined's: it sees each path relative to the directory (a directory's with a
trailing "/"), and a file it picks brings its parent directories along (DetCallback uploads `checkpoint-N/` so)."""

from __future__ import annotations

from stalwart import core


def _tree(root):
    return sorted(p.relative_to(root).as_posix() + ("/" if p.is_dir() else "") for p in root.rglob("*"))


def test_the_selector_sees_relative_paths_and_picks_files_deep_in_the_tree(tmp_path, monkeypatch):
    monkeypatch.delenv("STALWART_INFO_FILE", raising=False)
    out = tmp_path / "outputs"
    for rel in ("checkpoint-10/model.bin", "checkpoint-20/model.bin", "checkpoint-20/sub/opt.bin",
                "runs/events.1", "other.txt"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(rel)
    (out / "empty").mkdir()
    seen = []

    def selector(path: str) -> bool:
        seen.append(path)
        return path.startswith(("checkpoint-20/", "runs/"))

    with core.init(checkpoint_storage=str(tmp_path / "ckpts")) as ctx:
        storage_id = ctx.checkpoint.upload(out, {"steps_completed": 20}, shard=True, selector=selector)
    assert {"checkpoint-20/", "checkpoint-20/sub/", "checkpoint-20/sub/opt.bin", "empty/", "other.txt"} <= set(seen)
    stored = tmp_path / "ckpts" / storage_id
    assert _tree(stored) == ["checkpoint-20/", "checkpoint-20/model.bin", "checkpoint-20/sub/",
                             "checkpoint-20/sub/opt.bin", "metadata.json", "runs/", "runs/events.1"]
    assert (stored / "checkpoint-20" / "sub" / "opt.bin").read_text() == "checkpoint-20/sub/opt.bin"


def test_without_a_selector_the_whole_tree_is_stored(tmp_path, monkeypatch):
    monkeypatch.delenv("STALWART_INFO_FILE", raising=False)
    out = tmp_path / "outputs"
    (out / "a" / "b").mkdir(parents=True)
    (out / "a" / "b" / "w.bin").write_text("w")
    (out / "top.txt").write_text("t")
    with core.init(checkpoint_storage=str(tmp_path / "ckpts")) as ctx:
        storage_id = ctx.checkpoint.upload(out, {"steps_completed": 1})
    assert _tree(tmp_path / "ckpts" / storage_id) == ["a/", "a/b/", "a/b/w.bin", "metadata.json", "top.txt"]
