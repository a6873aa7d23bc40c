"""B15: the task proxy's overhead (issue 32, acceptance 8): a 10 MB download and 1,000 small requests through
`/proxy/command-<id>/...` against the same answers fetched straight from the task's server.

One LocalTestCluster (a master and an agent as processes) runs a command whose entrypoint is
`stalwart.harness.service` starting the recording service (stalwart.testing.recording_service); its port comes
from the task's log. Per round, interleaved: the download straight then through the proxy (order alternating by
round), and 1,000 sequential small GETs (`.../bytes/64`) each way over one keep-alive connection per side.
Targets: download <= 1.2x the direct median, small requests <= 1.5x. Prints the table recorded in
bench/RESULTS.md.

    .venv/bin/python bench/proxy_overhead.py [--rounds 5] [--small 1000]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import sys
import tempfile
import time

import httpx

from stalwart.testing import LocalTestCluster

DOWNLOAD = 10 * 2**20
SERVER = ["python3", "-m", "stalwart.harness.service", "--",
          "python3", "-m", "stalwart.testing.recording_service", "{port}"]


def _download(client: httpx.Client, url: str) -> float:
    t0 = time.perf_counter()
    size = 0
    with client.stream("GET", url) as answer:
        for chunk in answer.iter_raw():
            size += len(chunk)
    assert size == DOWNLOAD, size
    return time.perf_counter() - t0


def _smalls(client: httpx.Client, url: str, count: int) -> list[float]:
    out = []
    for _ in range(count):
        t0 = time.perf_counter()
        answer = client.get(url)
        out.append(time.perf_counter() - t0)
        assert answer.status_code == 200 and len(answer.content) == 64
    return out


def _started(c: LocalTestCluster) -> tuple[str, int]:
    made = c.cli("cmd", "run", "-d", "--config", "resources.slots=0", *SERVER, check=True)
    found = re.search(r"Launched command (\d+)", made.stdout)
    assert found, made.stdout
    cmd_id = found.group(1)

    def port() -> int | None:
        seen = re.search(r"listens on port (\d+)", c.cli("cmd", "logs", cmd_id).stdout)
        return int(seen.group(1)) if seen else None

    return cmd_id, c.wait_for(port, timeout=120, what="the task's server")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalTestCluster(pathlib.Path(tmp) / "home") as c:
        cmd_id, port = _started(c)
        via = f"{c.url}/proxy/command-{cmd_id}"
        direct = f"http://127.0.0.1:{port}/proxy/command-{cmd_id}"
        auth = {"Authorization": f"Bearer {c.admin_token}"}
        with httpx.Client(headers=auth, timeout=60) as proxied, httpx.Client(timeout=60) as straight:
            _smalls(proxied, f"{via}/bytes/64", 50)  # warm both sides: connections, the master's session cache
            _smalls(straight, f"{direct}/bytes/64", 50)
            rows = []
            for r in range(args.rounds):
                sides = [("direct", straight, direct), ("proxy", proxied, via)]
                times: dict[str, tuple[float, float]] = {}
                for name, client, base in sides if r % 2 == 0 else sides[::-1]:
                    big = _download(client, f"{base}/bytes/{DOWNLOAD}")
                    small = statistics.median(_smalls(client, f"{base}/bytes/64", args.small))
                    times[name] = (big, small)
                rows.append(times)
        _report(rows, args.small)
        c.cli("cmd", "kill", cmd_id)
    return 0


def _report(rows: list[dict[str, tuple[float, float]]], count: int) -> None:
    print(f"round  download direct ms  proxy ms  ratio   small({count}) direct med ms  proxy med ms  ratio")
    for i, t in enumerate(rows, 1):
        (bd, sd), (bp, sp) = t["direct"], t["proxy"]
        print(f"{i:5d}  {bd * 1e3:18.1f}  {bp * 1e3:8.1f}  {bp / bd:5.2f}   {sd * 1e3:27.3f}  {sp * 1e3:12.3f}  "
              f"{sp / sd:5.2f}")
    bd = statistics.median(t["direct"][0] for t in rows)
    bp = statistics.median(t["proxy"][0] for t in rows)
    sd = statistics.median(t["direct"][1] for t in rows)
    sp = statistics.median(t["proxy"][1] for t in rows)
    print(f"  med  {bd * 1e3:18.1f}  {bp * 1e3:8.1f}  {bp / bd:5.2f}   {sd * 1e3:27.3f}  {sp * 1e3:12.3f}  "
          f"{sp / sd:5.2f}")
    print(f"download: {bp / bd:.2f}x direct (target <= 1.2x), +{(bp - bd) * 1e3:.1f} ms for 10 MB; "
          f"small requests: {sp / sd:.2f}x direct (target <= 1.5x), +{(sp - sd) * 1e3:.3f} ms each")


if __name__ == "__main__":
    sys.exit(main())
