"""B11 (checkpoint storage): save/restore throughput of a 500 MB checkpoint through Stalwart's S3 backend vs plain
boto3, and the master's resident memory while it streams a 2 GB checkpoint download.

Throughput: moto's S3 server (an emulator, started as tests/storage_servers.py starts it, on 127.0.0.1) and a
checkpoint of random bytes: one 400 MiB file, one 68 MiB file, eight of 4 MiB and a small JSON file (500 MiB).
Per round, each side saves the directory under a fresh key prefix and restores it into an empty directory:
Stalwart through `make_storage({type: s3, ...})` (`upload` / `download`, what the harness calls), the baseline
through boto3's `upload_file` / `download_file` (default TransferConfig: 8 MiB parts, 10 threads) after a
`list_objects_v2`. Sides alternate within a round (the first side alternates between rounds); medians of rounds.
Target: Stalwart >= 0.9x boto3 for both.

Memory: a real master (LocalTestCluster, no agent: the benchmark registers the checkpoint through the API as a
trial would) whose shared_fs storage holds a 2 GiB checkpoint; GET /api/v1/checkpoints/{uuid}/download is read at
full speed and discarded while the master's VmRSS is sampled every 100 ms. Target: peak - before < 64 MiB.

Run from the repository root:  .venv/bin/python bench/storage_throughput.py [--rounds 5] [--only throughput|memory]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable

import httpx
import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "integration")]  # the tests' emulator and agent helpers

from container_world import BASE_CONFIG, OrderTaker, context_of, create, first_trial  # noqa: E402
from process_memory import rss  # noqa: E402

import storage_servers  # noqa: E402 - after the path above
from helpers_auth import bearer  # noqa: E402
from stalwart.client import Client  # noqa: E402
from stalwart.storage import make_storage  # noqa: E402
from stalwart.testing import LocalTestCluster, free_port  # noqa: E402

MiB = 2**20
CHECKPOINT = {"model/weights.bin": 400 * MiB, "optimizer.bin": 68 * MiB,
              **{f"extra/shard-{i}.bin": 4 * MiB for i in range(8)}, "metadata.json": 2000}
BIG_CHECKPOINT = {"model/weights.bin": 1536 * MiB, "optimizer.bin": 448 * MiB,
                  **{f"extra/shard-{i}.bin": 8 * MiB for i in range(8)}}
TARGET_RATIO = 0.9
MAX_GROWTH = 64 * MiB
SAMPLE_S = 0.1


def write_checkpoint(root: pathlib.Path, sizes: dict[str, int]) -> int:
    """Random (incompressible) files of `sizes` under `root`, written from one 8 MiB random block per file
    (shifted each write, so no two blocks of the file repeat at one offset); the total size."""
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        block = os.urandom(8 * MiB)
        with path.open("wb") as f:
            left, shift = size, 0
            while left:
                piece = (block[shift:] + block[:shift])[:min(left, len(block))]
                f.write(piece)
                left -= len(piece)
                shift = (shift + 4099) % len(block)
    return sum(sizes.values())


# -- throughput --------------------------------------------------------------------------------------------------


class Moto:
    """moto's S3 server on 127.0.0.1 with the tests' bucket, stopped (its process group) on exit."""

    def __init__(self, workdir: pathlib.Path) -> None:
        port = free_port()
        log = workdir / "moto.log"
        with log.open("ab") as out:
            self.proc = subprocess.Popen(storage_servers.COMMANDS["s3"](port), stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
        self.emulator = storage_servers.Emulator("s3", self.proc.pid, f"http://127.0.0.1:{port}")
        try:
            storage_servers._wait_until_answering(self.proc, self.emulator, log)
            storage_servers._make_bucket(self.emulator)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        storage_servers._stop(self.proc.pid)
        self.proc.wait(timeout=10)

    def __enter__(self) -> Moto:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def boto3_side(emulator: storage_servers.Emulator) -> tuple[Callable[..., None], Callable[..., None]]:
    """Save and restore of a directory with boto3's managed transfers, default TransferConfig."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=emulator.endpoint, aws_access_key_id=storage_servers.S3_KEY,
                      aws_secret_access_key=storage_servers.S3_SECRET, region_name="us-east-1")
    bucket = emulator.bucket

    def save(src: pathlib.Path, prefix: str) -> None:
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(src).as_posix()}")

    def restore(prefix: str, dst: pathlib.Path) -> None:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
            for obj in page.get("Contents", []):
                target = dst / obj["Key"][len(prefix) + 1:]
                target.parent.mkdir(parents=True, exist_ok=True)
                s3.download_file(bucket, obj["Key"], str(target))

    return save, restore


def stalwart_side(emulator: storage_servers.Emulator) -> tuple[Callable[..., None], Callable[..., None]]:
    """Save and restore through the StorageManager the harness uses (`make_storage` of an s3 section)."""
    storage = make_storage(emulator.checkpoint_storage(prefix="bench-stalwart"))

    def save(src: pathlib.Path, prefix: str) -> None:
        storage.upload(src, prefix)

    def restore(prefix: str, dst: pathlib.Path) -> None:
        storage.download(prefix, dst)

    return save, restore


def _same_files(a: pathlib.Path, b: pathlib.Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    if files != sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()):
        return False
    return all(subprocess.run(["cmp", "-s", str(a / f), str(b / f)]).returncode == 0 for f in files)


def throughput(rounds: int, tmp: pathlib.Path) -> dict[str, list[float]]:
    src = tmp / "checkpoint"
    total = write_checkpoint(src, CHECKPOINT)
    print(f"checkpoint: {len(CHECKPOINT)} files, {total / MiB:.0f} MiB of random bytes", flush=True)
    times: dict[str, list[float]] = {f"{side} {op}": [] for side in ("stalwart", "boto3") for op in ("save", "restore")}
    with Moto(tmp) as moto:
        sides = {"stalwart": stalwart_side(moto.emulator), "boto3": boto3_side(moto.emulator)}
        cleaner = make_storage(moto.emulator.checkpoint_storage(prefix=""))
        for r in range(rounds + 1):  # round 0: a warm-up of each side, not counted
            order = ["stalwart", "boto3"] if r % 2 == 0 else ["boto3", "stalwart"]
            for side in order:
                save, restore = sides[side]
                key, dst = f"{side}-{r}-{uuid.uuid4().hex[:8]}", tmp / "restored"
                t0 = time.perf_counter()
                save(src, f"bench-stalwart/{key}" if side == "boto3" else key)
                t1 = time.perf_counter()
                restore(f"bench-stalwart/{key}" if side == "boto3" else key, dst)
                t2 = time.perf_counter()
                if r == 0 and not _same_files(src, dst):
                    raise SystemExit(f"{side}: the restored checkpoint differs from the saved one")
                shutil.rmtree(dst)
                cleaner.delete("bench-stalwart")  # keeps the emulator's memory small
                if r:
                    times[f"{side} save"].append(t1 - t0)
                    times[f"{side} restore"].append(t2 - t1)
                print(f"round {r}{' (warm-up)' if not r else ''} {side:8s} save {total / MiB / (t1 - t0):6.0f} MiB/s"
                      f"  restore {total / MiB / (t2 - t1):6.0f} MiB/s", flush=True)
    report_throughput(times, total)
    return times


def report_throughput(times: dict[str, list[float]], total: int) -> None:
    print(f"\n{'':8s}{'stalwart MiB/s':>16s}{'boto3 MiB/s':>14s}{'ratio':>8s}   (medians of {len(times['boto3 save'])}"
          " rounds; ratio = stalwart / boto3)")
    for op in ("save", "restore"):
        ours, theirs = statistics.median(times[f"stalwart {op}"]), statistics.median(times[f"boto3 {op}"])
        ratio = theirs / ours
        verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
        print(f"{op:8s}{total / MiB / ours:16.0f}{total / MiB / theirs:14.0f}{ratio:8.2f}   "
              f"({verdict} the target >= {TARGET_RATIO}x)")


# -- master memory while streaming a download --------------------------------------------------------------------


def _register(cluster: LocalTestCluster, home: pathlib.Path) -> tuple[str, int]:
    """An experiment with shared_fs storage, a 2 GiB checkpoint in it, reported through the API; (uuid, size)."""
    storage = home / "storage"
    storage.mkdir()
    agent = OrderTaker(cluster, "bench", pool="default", slot_type="cpu")
    config = BASE_CONFIG.format(name="bench-download") + yaml.safe_dump(
        {"checkpoint_storage": {"type": "shared_fs", "host_path": str(storage)}})
    order = agent.order(trial_id=first_trial(cluster, create(cluster, config, context_of(home))))
    ckpt = str(uuid.uuid4())
    total = write_checkpoint(storage / ckpt, BIG_CHECKPOINT)
    with Client(cluster.url, allocation_token=order.env["STALWART_ALLOCATION_TOKEN"]) as trial:
        trial.register_checkpoint(order.trial_id, ckpt, metadata={"steps_completed": 1},
                                  resources=dict(BIG_CHECKPOINT))
    agent.close()
    return ckpt, total


def memory(tmp: pathlib.Path) -> dict[str, float]:
    home = tmp / "home"
    home.mkdir(parents=True)
    with LocalTestCluster(home, agents=0) as cluster:
        assert cluster.master is not None
        pid = cluster.master.pid
        ckpt, total = _register(cluster, home)
        samples: list[tuple[float, int]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(SAMPLE_S):
                samples.append((time.monotonic(), rss(pid)))

        time.sleep(1.0)
        before = rss(pid)
        sampler = threading.Thread(target=sample, daemon=True)
        received, t0 = 0, time.monotonic()
        with httpx.Client(base_url=cluster.url, timeout=600, headers=bearer(cluster.admin_token or "")) as http:
            sampler.start()
            with http.stream("GET", f"/api/v1/checkpoints/{ckpt}/download") as reply:
                if reply.status_code != 200:
                    raise SystemExit(f"download failed: {reply.status_code} {reply.read()[:300]!r}")
                for chunk in reply.iter_raw(1 << 20):
                    received += len(chunk)
            elapsed = time.monotonic() - t0
            stop.set()
            sampler.join()
        time.sleep(1.0)
        after = rss(pid)
    peak = max([before] + [s for _t, s in samples])
    out = {"checkpoint_mib": total / MiB, "archive_mib": received / MiB, "seconds": elapsed,
           "mib_per_s": received / MiB / elapsed, "samples": len(samples), "rss_before_mib": before / MiB,
           "rss_peak_mib": peak / MiB, "rss_after_mib": after / MiB, "growth_mib": (peak - before) / MiB}
    verdict = "flat: meets" if peak - before < MAX_GROWTH else "NOT flat: misses"
    print(f"download of a {out['checkpoint_mib']:.0f} MiB checkpoint: {out['archive_mib']:.0f} MiB archive in "
          f"{elapsed:.1f} s ({out['mib_per_s']:.0f} MiB/s); master VmRSS every {SAMPLE_S * 1000:.0f} ms "
          f"({len(samples)} samples): before {out['rss_before_mib']:.0f} MiB, peak {out['rss_peak_mib']:.0f} MiB, "
          f"after {out['rss_after_mib']:.0f} MiB; growth {out['growth_mib']:.1f} MiB "
          f"({verdict} the target < {MAX_GROWTH // MiB} MiB)", flush=True)
    if received < total:
        raise SystemExit(f"the archive ({received} bytes) is smaller than the checkpoint ({total} bytes)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["throughput", "memory"])
    ap.add_argument("--json", type=pathlib.Path, help="write the raw numbers here")
    args = ap.parse_args()
    raw: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        if args.only in (None, "throughput"):
            raw["throughput_seconds"] = throughput(args.rounds, pathlib.Path(tmp) / "s3")
        if args.only in (None, "memory"):
            raw["memory"] = memory(pathlib.Path(tmp) / "memory")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=2))


if __name__ == "__main__":
    main()
