"""B-auth: what the user-route check costs per request (issue 19: < 0.2 ms), measured on the real check.

A real master app (SQLite in a temp dir, `create_app`) with a logged-in admin and a logged-in non-admin user
who owns one experiment row. For three cases, the route's own check (`routes/contract.user_check(spec)`, the
dependency FastAPI runs before the handler: session lookup, CSRF for cookies, the permission on the target)
is awaited N times on a real Starlette request, and the time per check is taken; rounds give a median:

- read:  GET  /api/v1/experiments            (view_experiments: any user; the session is in the cache)
- owner: POST /api/v1/experiments/{id}/kill  as its non-admin owner (edit_experiments: reads the owner row)
- admin: POST /api/v1/experiments/{id}/kill  as an admin (no owner lookup)

The baseline in the same run is the check of agents' routes (`require_cluster`: an enrolled agent's own credential,
hashed and looked up in the credential cache, on its own action poll): the ratio says what a user check costs next
to it.

Run from the repository root:  .venv/bin/python bench/auth_check.py [--rounds 5] [--n 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request

from stalwart.api.routes_table import lookup
from stalwart.api.states import ExperimentState
from stalwart.master.app import create_app
from stalwart.master.cluster import agents as cluster_agents
from stalwart.master.identity import accounts
from stalwart.master.queries import experiments as experiment_rows
from stalwart.master.routes import contract
from stalwart.master.settings import MasterSettings


def request(app, method: str, path: str, params: dict, token: str) -> Request:
    scope = {"type": "http", "method": method, "path": path, "path_params": params, "app": app,
             "headers": [(b"authorization", f"Bearer {token}".encode())], "query_string": b"", "state": {}}
    return Request(scope)


async def per_check_us(check: Callable[[Request], Awaitable[None]], make: Callable[[], Request], n: int) -> float:
    req = make()
    start = time.perf_counter()
    for _ in range(n):
        await check(req)
    return (time.perf_counter() - start) / n * 1e6


async def main(rounds: int, n: int) -> None:
    home = pathlib.Path(tempfile.mkdtemp(prefix="bench-auth-"))
    app = create_app(MasterSettings(db_url=f"sqlite:///{home / 'master.db'}", home=home))
    m = app.state.master
    admin_token, _ = await accounts.login(m, "admin", "", False)
    await accounts.create_user(m, username="alice", display_name=None, admin=False, active=True, password="pw",
                               is_hashed=False)
    alice_token, _ = await accounts.login(m, "alice", "pw", False)
    agent_credential = cluster_agents.register(m, {"agent_id": "a", "slots": 1}, "127.0.0.1", caller=None)["credential"]
    with m.db.begin() as conn:
        exp_id = experiment_rows.insert(conn, name="bench", description=None, labels=[], owner="alice", config={},
                                        config_text="", state=ExperimentState.PAUSED, created_at=time.time())
    listing, kill = lookup("GET", "/api/v1/experiments"), lookup("POST", "/api/v1/experiments/{exp_id}/{action}")
    kill_params = {"exp_id": str(exp_id), "action": "kill"}
    cases = {
        "read": (contract.user_check(listing),
                 lambda: request(app, "GET", "/api/v1/experiments", {}, alice_token)),
        "owner": (contract.user_check(kill),
                  lambda: request(app, "POST", f"/api/v1/experiments/{exp_id}/kill", kill_params, alice_token)),
        "admin": (contract.user_check(kill),
                  lambda: request(app, "POST", f"/api/v1/experiments/{exp_id}/kill", kill_params, admin_token)),
        "agent credential (baseline)": (contract.require_cluster,
                                        lambda: request(app, "GET", "/api/v1/agents/a/actions", {"agent_id": "a"},
                                                        agent_credential)),
    }
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (check, make) in cases.items():
            results[name].append(await per_check_us(check, make, n))
    base = statistics.median(results["agent credential (baseline)"])
    print(f"{rounds} rounds x {n} checks each; microseconds per check (median of rounds, and each round):")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"  {name:26s} {med:7.1f} us  ({med / base:4.1f}x the agent-credential check)  "
              f"rounds: {', '.join(f'{v:.1f}' for v in values)}")
    worst = max(statistics.median(v) for k, v in results.items() if "baseline" not in k)
    print(f"target: every user check < 200 us: {'met' if worst < 200 else 'MISSED'} (worst median {worst:.1f} us)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.n))
