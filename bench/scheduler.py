"""B: one scheduling pass at cluster scale: 10,000 pending allocations × 1,000 agents of 8 slots,
beside the same pass over 1,000 allocations; time per pass (median of rounds) and peak memory.

Run: .venv/bin/python bench/scheduler.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
import tracemalloc

from stalwart.scheduler import AgentState, PoolPolicy, Request, schedule


def inputs(n_pending: int, n_agents: int = 1000, slots: int = 8, seed: int = 0):
    rng = random.Random(seed)
    agents = [AgentState(f"agent-{i:04d}", "default", slots, tuple(range(slots))) for i in range(n_agents)]
    jobs = max(1, n_pending // 20)
    reqs = [Request(f"alloc-{i}", f"job-{i % jobs}", rng.choice((1, 1, 1, 2, 4, 8)), priority=rng.randint(1, 99),
                    queue_position=float(i % jobs), submitted_at=float(i)) for i in range(n_pending)]
    return reqs, agents


def one_pass(n: int, policy: PoolPolicy, rounds: int) -> tuple[float, float, int]:
    reqs, agents = inputs(n)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        d = schedule(reqs, agents, default_policy=policy)
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    schedule(reqs, agents, default_policy=policy)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20, len(d.starts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"{'policy':<22}{'pending':>8}{'agents':>8}{'starts':>8}{'ms/pass':>10}{'peak MiB':>10}")
    for name, policy in (("priority", PoolPolicy()), ("priority+preemption", PoolPolicy(preemption=True)),
                         ("fair_share", PoolPolicy(type="fair_share"))):
        small = one_pass(1_000, policy, args.rounds)
        large = one_pass(10_000, policy, args.rounds)
        for n, (sec, mib, starts) in ((1_000, small), (10_000, large)):
            print(f"{name:<22}{n:>8}{1000:>8}{starts:>8}{sec * 1000:>10.1f}{mib:>10.1f}")
        bound = 10 * math.log(10_000) / math.log(1_000)
        print(f"{'':<22}growth ×{large[0] / small[0]:.1f} for 10× the allocations (n log n bound ×{bound:.1f})")


if __name__ == "__main__":
    main()
