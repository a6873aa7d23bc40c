"""B10 (container launch): `experiment create` -> the trial's first log line, Docker runtime vs process runtime.

Two LocalTestClusters run side by side and are not timed (a cluster is long-lived): one whose agent runs tasks
as processes, one whose agent runs them in Docker containers (the tests' own dockerd on a private socket,
tests/container_servers.py, with the python image made offline, already present: a local image, no pull). Each
round times, on each cluster in turn, the same tiny trial whose first statement prints a line:

  t0       time.time() just before the client packs the context and POSTs /api/v1/experiments;
  latency  the stored timestamp of the trial's first line (the agent's clock when it read the line) - t0;
           the benchmark polls the trial's logs until that line is stored (the poll does not enter the number).

Rounds alternate the two runtimes (after one discarded warm-up of each, which for Docker also probes the
image's Python and builds the harness bundle, done once per image and agent). Printed: every round, the medians
and median(docker) - median(process). Target: at most 1 s more.

Run from the repository root, as root (dockerd):  .venv/bin/python bench/containers.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import base64
import os
import pathlib
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the tests' container servers and images

from container_servers import RUN_DIR_ENV, servers, stop_all  # noqa: E402 - after the path above
from stalwart.context import pack_context  # noqa: E402
from stalwart.testing import LocalTestCluster  # noqa: E402

TARGET_EXTRA_S = 1.0
FIRST = "FIRST-LINE"
TRAIN_PY = f'print("{FIRST}", flush=True)\nimport time\ntime.sleep(0.5)\n'
CONFIG = """name: bench-containers
entrypoint: python3 train.py
searcher: {{name: single, metric: x, max_length: {{batches: 1}}}}
max_restarts: 0
{environment}"""
ALLOW_ROOT = "security:\n  allow_root_tasks: true\n"


def first_line_latency(c: LocalTestCluster, ctx: pathlib.Path, environment: str) -> float:
    """Seconds from just before the create request to the stored timestamp of the trial's first line."""
    context = base64.b64encode(pack_context(ctx).data).decode()
    t0 = time.time()
    reply = c.client().post("/experiments", {"config": CONFIG.format(environment=environment),
                                            "context": context, "activate": True})
    exp_id = reply["experiment"]["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        trials = c.client().get(f"/experiments/{exp_id}")["trials"]
        if trials:
            for line in c.client().stream_lines(f"/trials/{trials[0]['id']}/logs", follow="false"):
                if FIRST in line["log"]:
                    c.cli("e", "kill", str(exp_id))
                    return float(line["timestamp"]) - t0
        time.sleep(0.05)
    raise RuntimeError(f"experiment {exp_id}: no first line in 120 s; agent log: {c.log('agent-0.log')[-2000:]}")


def measure(rounds: int, root: pathlib.Path) -> dict[str, list[float]]:
    started = servers()
    assert started.docker_url and started.python_image, "dockerd and the python image are needed (run as root)"
    ctx = root / "context"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN_PY)
    image_env = f"environment: {{image: {started.python_image}}}\n"
    times: dict[str, list[float]] = {"process": [], "docker": []}
    with LocalTestCluster(root / "process", master_config=ALLOW_ROOT) as proc_cluster, \
            LocalTestCluster(root / "docker", master_config=ALLOW_ROOT, runtime="docker",
                             engine_url=started.docker_url) as docker_cluster:
        first_line_latency(proc_cluster, ctx, "")  # warm-ups, discarded
        first_line_latency(docker_cluster, ctx, image_env)
        for i in range(rounds):
            times["process"].append(first_line_latency(proc_cluster, ctx, ""))
            times["docker"].append(first_line_latency(docker_cluster, ctx, image_env))
            print(f"round {i + 1}/{rounds}: process {times['process'][-1]:.3f} s, "
                  f"docker {times['docker'][-1]:.3f} s", flush=True)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-containers-"))
    run_dir = root / "servers"
    run_dir.mkdir()
    (run_dir / "owner").write_text(str(os.getpid()))
    os.environ[RUN_DIR_ENV] = str(run_dir)
    try:
        times = measure(args.rounds, root)
    finally:
        stop_all(run_dir)
    process, docker = statistics.median(times["process"]), statistics.median(times["docker"])
    extra = docker - process
    print(f"median create -> first log line: process {process:.3f} s, docker {docker:.3f} s; "
          f"docker - process = {extra:+.3f} s (target <= {TARGET_EXTRA_S:.1f} s): "
          f"{'MET' if extra <= TARGET_EXTRA_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
