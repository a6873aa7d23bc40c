"""One rank of a two-rank sharded checkpoint whose ranks collide, so that exactly one of them fails to store its
shard (issue 29): rank 0 writes `model/weights.bin` (a directory `model`), rank 1 a file `model`; whichever stores
second fails. Each also writes a file of its own. Prints RESULT <json>.

    shard_worker.py RANK PORT STORAGE_DIR
"""

import json
import sys

from stalwart import core


def main(rank: int, port: int, storage: str) -> None:
    dist = core.DistributedContext(rank=rank, size=2, local_rank=rank, local_size=2, cross_rank=0, cross_size=1,
                                   pub_port=port)
    out: dict = {"rank": rank}
    with core.init(distributed=dist, checkpoint_storage=storage) as ctx:
        try:
            with ctx.checkpoint.store_path({"steps_completed": 1}, shard=True) as (path, storage_id):
                out["storage_id"] = storage_id
                (path / f"a_own{rank}.txt").write_text(f"rank {rank}")  # stored before `model`
                if rank == 0:
                    (path / "model").mkdir()
                    (path / "model" / "weights.bin").write_bytes(b"w" * 1000)
                else:
                    (path / "model").write_text("a file where rank 0 has a directory")
            out["stored"] = True
        except OSError as err:
            out["stored"], out["error"] = False, f"{type(err).__name__}: {err}"
            dist.allgather(None)  # the collective the rank that stored waits in before reporting
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
