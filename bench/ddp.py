"""Launcher overhead: per-step time of a 2-process gloo DDP job under our launcher vs plain torchrun.

The same worker script (this file with --worker) trains a 3-layer MLP (512 wide, ~0.53 M
parameters, so each step all-reduces ~2 MB of gradients over gloo) on synthetic data, batch 32 per
worker, one CPU thread per worker. After a warm-up it times every step (wall clock, with a
barrier before the timed window) and rank 0 writes the median step time and the mean of its fastest
50-step chunk (the figure least slowed down by other processes on a shared machine). Each round runs the job
twice, once per launcher, in alternating order (AB, BA, AB, ...), seconds apart:
  stalwart  python -m determined.launch.torch_distributed python3 bench/ddp.py --worker ...
            (DET_SLOT_IDS='[0, 1]': torch.distributed.run with 2 workers, each under wrap_rank)
  torchrun  python -m torch.distributed.run --nproc_per_node=2 ... bench/ddp.py --worker ...
The printed ratio is median(stalwart step) / median(torchrun step) over all rounds, beside the
median of the per-round ratios. Target: <= 1.01.

Run from the repository root:  .venv/bin/python bench/ddp.py [--rounds 10] [--steps 300]   (~3-4 min)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
REPO = HERE.parents[1]
COMPAT = REPO / "src" / "stalwart" / "harness" / "compat"
WARMUP = 30
CHUNK = 50  # steps per chunk for the fastest-chunk figure (the one least slowed by other processes)


def worker(steps: int, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(rank)
    x, y = torch.randn(64, 32, 512, generator=gen), torch.randint(0, 10, (64, 32), generator=gen)
    times = []
    for step in range(WARMUP + steps):
        if step == WARMUP:
            dist.barrier()
        start = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x[step % 64]), y[step % 64])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= WARMUP:
            times.append(time.perf_counter() - start)
    if rank == 0:
        chunks = [statistics.fmean(times[i:i + CHUNK]) for i in range(0, len(times) - CHUNK + 1, CHUNK)]
        pathlib.Path(out).write_text(json.dumps({"median_ms": statistics.median(times) * 1e3,
                                                 "fastest_chunk_ms": min(chunks) * 1e3, "steps": len(times)}))
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict:
    drop = ("STALWART_", "DET_", "TORCHELASTIC_", "RANK", "LOCAL_", "GROUP_", "WORLD_SIZE", "MASTER_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "PYTHONPATH": str(COMPAT), **extra}


def run_once(kind: str, steps: int, workdir: pathlib.Path) -> dict:
    out = workdir / f"{kind}-{time.monotonic_ns()}.json"
    script = [str(HERE), "--worker", "--steps", str(steps), "--out", str(out)]
    if kind == "stalwart":
        cmd = [sys.executable, "-m", "determined.launch.torch_distributed", "python3", *script]
        env = _env(DET_SLOT_IDS="[0, 1]")
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
               f"--master_port={_free_port()}", *script]
        env = _env()
    start = time.monotonic()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if res.returncode != 0 or not out.exists():
        raise RuntimeError(f"{kind} run failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    return {**json.loads(out.read_text()), "wall_s": time.monotonic() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args()
    if args.worker:
        worker(args.steps, args.out)
        return
    results: dict[str, list[dict]] = {"stalwart": [], "torchrun": []}
    ratios, chunk_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ("stalwart", "torchrun") if r % 2 == 0 else ("torchrun", "stalwart")
            got = {kind: run_once(kind, args.steps, pathlib.Path(tmp)) for kind in order}
            for kind, value in got.items():
                results[kind].append(value)
            ratios.append(got["stalwart"]["median_ms"] / got["torchrun"]["median_ms"])
            chunk_ratios.append(got["stalwart"]["fastest_chunk_ms"] / got["torchrun"]["fastest_chunk_ms"])
            print(f"round {r + 1}: stalwart {got['stalwart']['median_ms']:.3f} ms/step "
                  f"(job {got['stalwart']['wall_s']:.1f} s), torchrun {got['torchrun']['median_ms']:.3f} ms/step "
                  f"(job {got['torchrun']['wall_s']:.1f} s), ratio {ratios[-1]:.4f}", flush=True)
    ours = statistics.median(v["median_ms"] for v in results["stalwart"])
    theirs = statistics.median(v["median_ms"] for v in results["torchrun"])
    ratio = ours / theirs
    print(f"\nmedian step: stalwart launcher {ours:.3f} ms, plain torchrun {theirs:.3f} ms")
    print(f"ratio of medians {ratio:.4f}; median of per-round ratios {statistics.median(ratios):.4f} "
          f"(range {min(ratios):.4f}..{max(ratios):.4f})")
    fast_ours = statistics.median(v["fastest_chunk_ms"] for v in results["stalwart"])
    fast_theirs = statistics.median(v["fastest_chunk_ms"] for v in results["torchrun"])
    print(f"fastest {CHUNK}-step chunk (median over rounds): stalwart {fast_ours:.3f} ms, torchrun "
          f"{fast_theirs:.3f} ms, ratio {fast_ours / fast_theirs:.4f}; median of per-round ratios "
          f"{statistics.median(chunk_ratios):.4f}")
    print(f"job wall time (start-up included): stalwart "
          f"{statistics.median(v['wall_s'] for v in results['stalwart']):.1f} s, torchrun "
          f"{statistics.median(v['wall_s'] for v in results['torchrun']):.1f} s")
    print(f"verdict: {'meets' if ratio <= 1.01 else 'misses'} the <= 1.01x target")
    if args.json:
        summary = {"results": results, "ratios": ratios, "chunk_ratios": chunk_ratios}
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
