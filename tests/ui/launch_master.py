"""Run a master with the web UI installed (create_app + ui.install + uvicorn), as `stalwart master run` would.

Used by the UI tests and bench/ui.py until create_app calls ui.install itself (install is idempotent).
Usage: python launch_master.py --db URL --home DIR --port N [--agent-timeout S] [--fake-jobs]
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--home", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--agent-timeout", type=float, default=30.0)
    p.add_argument("--fake-jobs", action="store_true", help="serve the documented job-queue API from memory")
    a = p.parse_args()

    import uvicorn

    from stalwart.master import ui
    from stalwart.master.app import create_app
    from stalwart.master.settings import MasterSettings

    home = pathlib.Path(a.home)
    home.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(MasterSettings(db_url=a.db, home=home, port=a.port, agent_timeout_s=a.agent_timeout))
    ui.install(app)
    if a.fake_jobs:
        sys.path.insert(0, str(pathlib.Path(__file__).parent))
        import fake_jobs

        fake_jobs.install(app)
    token = home / "cluster-token"
    token.write_text(app.state.master.cluster_token)
    os.chmod(token, 0o600)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning", timeout_graceful_shutdown=3)


if __name__ == "__main__":
    main()
