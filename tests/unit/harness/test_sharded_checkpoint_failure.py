"""A rank of a sharded checkpoint that fails to store its shard removes its own files only, never the other
ranks' (issue 29): two real worker processes whose shards collide (`shard_worker.py`), so exactly one fails."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from stalwart.testing.cluster import rendezvous_port

WORKER = str(pathlib.Path(__file__).with_name("shard_worker.py"))
FILES_OF = {0: ["a_own0.txt", "metadata.json", "model/weights.bin"], 1: ["a_own1.txt", "model"]}


def _files(root: pathlib.Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())


def _run_ranks(storage: pathlib.Path) -> dict[int, dict]:
    port = rendezvous_port()
    procs = [subprocess.Popen([sys.executable, WORKER, str(rank), str(port), str(storage)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    found = [json.loads(line[len("RESULT "):]) for out in outs for line in out.splitlines()
             if line.startswith("RESULT ")]
    return {r["rank"]: r for r in found}


def test_a_failed_rank_leaves_the_other_ranks_files(tmp_path: pathlib.Path) -> None:
    storage = tmp_path / "checkpoints"
    results = _run_ranks(storage)
    assert sorted(results) == [0, 1]
    stored = [rank for rank, r in results.items() if r["stored"]]
    assert len(stored) == 1, results  # the shards collide at `model`: one of them fails
    failed = 1 - stored[0]
    assert "model" in results[failed]["error"], results[failed]
    storage_id = results[0]["storage_id"]
    assert results[1]["storage_id"] == storage_id
    # the rank that stored keeps every file; none of the failed rank's own files stays
    assert _files(storage / storage_id) == FILES_OF[stored[0]]
    assert [p.name for p in storage.iterdir()] == [storage_id]  # no scratch directory left beside it
