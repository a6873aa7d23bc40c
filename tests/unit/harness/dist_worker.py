"""A worker script for the distributed tests, run in real processes (directly, under torchrun, or our launcher).

    dist_worker.py collectives [RANK SIZE PORT]   exercise every collective; print RESULT <json>
    dist_worker.py die                            once all have started, rank 1 exits 3; the others sleep
    dist_worker.py sigterm OUT_DIR                each rank records a SIGTERM in OUT_DIR, then exits
    dist_worker.py abort [after-context]          SIGABRT at exit (after a cleanly closed Core API context)
    dist_worker.py allreduce OUT_DIR              all-reduce a tensor forever (after writing OUT_DIR/ready.RANK)
    dist_worker.py checkpoint STORAGE_DIR         chief-only and sharded checkpoints; print RESULT <json>
"""

import json
import os
import pathlib
import signal
import sys
import time

from stalwart import core


def collectives(dist: core.DistributedContext) -> dict:
    out = {"rank": dist.rank, "size": dist.size, "local": [dist.local_rank, dist.local_size],
           "cross": [dist.cross_rank, dist.cross_size], "chief_ip": dist.chief_ip}
    out["allgather"] = dist.allgather({"rank": dist.rank})
    out["gather"] = dist.gather(dist.rank * 10)
    out["broadcast"] = dist.broadcast(f"from {dist.rank}")
    out["allgather_local"] = dist.allgather_local(dist.local_rank)
    out["gather_local"] = dist.gather_local(dist.local_rank + 100)
    out["broadcast_local"] = dist.broadcast_local(f"local chief of machine {dist.cross_rank}"
                                                  if dist.local_rank == 0 else None)
    out["many_rounds_ok"] = all(dist.allgather(i) == [i] * dist.size for i in range(200))
    out["big"] = len(dist.broadcast(b"x" * 3_000_000 if dist.rank == 0 else None))
    dist.close()
    return out


def checkpoints(storage: str) -> dict:
    dist = core.DistributedContext.from_torch_distributed()
    out = {"rank": dist.rank}
    with core.init(distributed=dist, checkpoint_storage=storage) as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 5, "by_rank": {str(dist.rank): dist.local_rank}},
                                       shard=True) as (path, sharded):
            (path / f"part{dist.rank}.txt").write_text(str(dist.rank))
        out["sharded"] = sharded
        out["sharded_metadata"] = ctx.checkpoint.get_metadata(sharded)
        try:
            with ctx.checkpoint.store_path({"steps_completed": 6}) as (path, chief_only):
                (path / "model.txt").write_text("weights")
            out["chief_only"] = chief_only
        except RuntimeError as err:
            out["chief_only_error"] = str(err)
        out["chief_only"] = dist.broadcast(out.get("chief_only"))
        local = pathlib.Path(storage).parent / f"local{dist.rank}"
        local.mkdir()
        (local / f"file{dist.rank}.txt").write_text("x")
        out["uploaded"] = ctx.checkpoint.upload(local if dist.rank == 0 else None, {"steps_completed": 7},
                                                shard=True)
        out["preempt"] = ctx.preempt.should_preempt()
    out["files"] = {ck: sorted(p.name for p in (pathlib.Path(storage) / ck).iterdir())
                    for ck in (out["sharded"], out["chief_only"], out["uploaded"])}
    return out


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "collectives":
        if len(argv) == 4:
            rank, size, port = map(int, argv[1:])
            dist = core.DistributedContext(rank=rank, size=size, local_rank=rank, local_size=size, cross_rank=0,
                                           cross_size=1, pub_port=port)
        else:
            dist = core.DistributedContext.from_torch_distributed()
        print("RESULT " + json.dumps(collectives(dist)), flush=True)
    elif mode == "checkpoint":
        print("RESULT " + json.dumps(checkpoints(argv[1])), flush=True)
    elif mode == "abort":
        if argv[1:] == ["after-context"]:
            with core.init(distributed=core.DistributedContext.from_torch_distributed(),
                           checkpoint_storage=os.devnull):
                pass
        os.abort()
    elif mode == "allreduce":
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        mark_ready(pathlib.Path(argv[1]))
        while True:
            dist.all_reduce(torch.ones(1000))
            time.sleep(0.01)
    elif mode == "die":
        print(f"started pid={os.getpid()}", flush=True)
        core.DistributedContext.from_torch_distributed().allgather(None)  # both have started
        if os.environ["RANK"] == "1":
            sys.exit(3)
        time.sleep(120)
    elif mode == "sigterm":
        out = pathlib.Path(argv[1])

        def on_term(signum, frame):
            (out / f"term.{os.environ['RANK']}").write_text("SIGTERM")
            sys.exit(0)

        signal.signal(signal.SIGTERM, on_term)
        mark_ready(out)
        time.sleep(120)


def mark_ready(out: pathlib.Path) -> None:
    """Write OUT/ready.RANK holding this pid, whole at once: the test reads it as soon as the name appears."""
    rank = os.environ["RANK"]
    partial = out / f".partial.{rank}"
    partial.write_text(str(os.getpid()))
    partial.rename(out / f"ready.{rank}")


if __name__ == "__main__":
    main(sys.argv[1:])
