"""B14 (Kubernetes reconcile): what one reconcile pass of the Kubernetes resource manager costs the master with N
pods running, against the same pass with 10 pods.

Self-contained: it starts the Kubernetes API TEST DOUBLE (stalwart.testing.k8s_api_double) in this process, one node
with room for every pod, and a Master in this process on SQLite (as `stalwart.testing.rm_conformance.World` builds
one) whose resource manager is Kubernetes. N single-trial experiments are created with
`experiments.create_experiment`; scheduling passes submit each run as one pod (a Job) through the manager's own
path, each pod a `sleep` stand-in process of the double, until every run is placed (ASSIGNED on its pod's one-shot
agent). Then each round times `KubernetesManager.reconcile()` in its own transaction (wall and CPU time of this
process): the informer's cache read, one row query, each run compared with its pod, the ended runs' pods looked
for. Done for the 10-pod master and the N-pod master, rounds interleaved; the pods are deleted at the end.

Run from the repository root:  .venv/bin/python bench/k8s_reconcile.py [--rounds 7] [--pods 1000]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence

from stalwart.master.queries import engine_jobs
from stalwart.master.scheduling import k8s_submit, scheduling
from stalwart.master.scheduling.k8s_manager import KubernetesManager
from stalwart.testing.k8s_api_double import KubeApiDouble, NodeSpec
from stalwart.testing.rm_conformance import World, master_config

STANDIN = ["sh", "-c", "exec sleep 3600", "--"]


class BenchWorld(World):
    """A master whose pool `default` Kubernetes serves (the node side is the double: nothing to play here)."""

    extra_config = "environment: {image: 'bench/trial:1'}\n"

    def __init__(self, home: pathlib.Path, double: KubeApiDouble, namespace: str) -> None:
        rm = {"type": "kubernetes", "slot_type": "cpu", "slot_resource_requests": {"cpu": 0.001},
              "kubeconfig": str(double.kubeconfig), "default_namespace": namespace, "agent_command": STANDIN,
              "job_name_prefix": f"{namespace}-"}
        super().__init__(home, master_config("kubernetes", ["default"]) | {"resource_manager": rm})

    def add_node(self, slots: int, pool: str = "default") -> str:
        raise NotImplementedError

    def start(self, allocation_id: str, ranks: Sequence[int] | None = None) -> None:
        raise NotImplementedError

    def exit(self, allocation_id: str, code: int | None) -> None:
        raise NotImplementedError

    def lose_node(self, node: str) -> None:
        raise NotImplementedError

    def kill_orders(self, allocation_id: str) -> set[str]:
        raise NotImplementedError


def placed(world: BenchWorld) -> int:
    with world.master.db.begin() as conn:
        return sum(r["state"] == "ASSIGNED" for r in engine_jobs.with_jobs(conn))


def fill(world: BenchWorld, n: int) -> None:
    t0 = time.monotonic()
    for _ in range(n):
        world.create(1)
    print(f"  {n} experiments created in {time.monotonic() - t0:.1f} s", flush=True)
    deadline = time.monotonic() + 600
    while placed(world) < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {placed(world)} of {n} runs placed in 600 s")
        scheduling.tick(world.master)
        time.sleep(0.5)
    print(f"  {n} pods running and placed after {time.monotonic() - t0:.1f} s", flush=True)


def one_pass(world: BenchWorld) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    with world.master.db.begin() as conn:
        KubernetesManager(world.master, conn, ["default"]).reconcile()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--pods", type=int, default=1000)
    args = p.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-k8s-"))
    with KubeApiDouble(tmp / "api", nodes=[NodeSpec("big", cpu=max(8, args.pods // 100))]) as double:
        small, big = BenchWorld(tmp / "small", double, "small"), BenchWorld(tmp / "big", double, "big")
        try:
            print("master with 10 pods:", flush=True)
            fill(small, 10)
            print(f"master with {args.pods} pods:", flush=True)
            fill(big, args.pods)
            times: dict[str, list[tuple[float, float]]] = {"10": [], str(args.pods): []}
            for _ in range(args.rounds):
                times["10"].append(one_pass(small))
                times[str(args.pods)].append(one_pass(big))
            for label, got in times.items():
                wall = statistics.median(w for w, _ in got) * 1000
                cpu = statistics.median(c for _, c in got) * 1000
                print(f"reconcile, {label:>5} pods: median wall {wall:.1f} ms, CPU {cpu:.1f} ms "
                      f"({args.rounds} rounds)")
            ratio = statistics.median(w for w, _ in times[str(args.pods)]) / statistics.median(
                w for w, _ in times["10"])
            print(f"{args.pods} pods / 10 pods: {ratio:.1f}x")
        finally:
            for world in (small, big):
                k8s_submit.close_links(world.master)
                world.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
