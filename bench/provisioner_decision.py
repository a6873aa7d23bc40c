"""How long the elastic provisioner's decision takes (`rm.elastic.decide`, issue 31): one pool with 1,000 pending
allocations (gangs of 1 to 16 slots) and 500 instances (starting, busy, idle for various times), the median of
rounds. Prints one line; the lead records it in bench/RESULTS.md.

    .venv/bin/python bench/provisioner_decision.py [--rounds 50]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from stalwart.rm.elastic import InstanceState, PoolLimits, TrackedInstance, decide

NOW = 1_800_000_000.0


def world(seed: int = 31) -> tuple[PoolLimits, list[int], list[TrackedInstance]]:
    rng = random.Random(seed)
    limits = PoolLimits(min_instances=10, max_instances=800, instance_slots=8, max_idle_s=1200, max_starting_s=1200)
    gangs = [rng.choice((1, 1, 1, 2, 4, 8, 16)) for _ in range(1000)]
    instances = []
    for n in range(500):
        kind = rng.random()
        if kind < 0.2:
            instances.append(TrackedInstance(f"i-{n}", InstanceState.STARTING, NOW - rng.uniform(0, 2400)))
        elif kind < 0.7:
            instances.append(TrackedInstance(f"i-{n}", InstanceState.RUNNING, NOW - 3600, registered=True))
        else:
            instances.append(TrackedInstance(f"i-{n}", InstanceState.RUNNING, NOW - 3600, registered=True,
                                             idle_since=NOW - rng.uniform(0, 2400)))
    return limits, gangs, instances


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    limits, gangs, instances = world()
    times = []
    decision = decide(limits, gangs, instances, NOW)
    for _ in range(args.rounds):
        start = time.perf_counter()
        decision = decide(limits, gangs, instances, NOW)
        times.append(time.perf_counter() - start)
    print(f"provisioner decision: 1000 pending allocations, 500 instances: median {statistics.median(times) * 1e3:.2f}"
          f" ms over {args.rounds} rounds (launch {decision.launch}, terminate {len(decision.terminate)}, "
          f"notes {len(decision.notes)})")


if __name__ == "__main__":
    main()
