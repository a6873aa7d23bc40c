"""`stalwart up|down`, `stalwart master run`, `stalwart agent run|list`: running the cluster itself."""

from __future__ import annotations

import logging
import os
import pathlib
import signal

import click

from stalwart.api.errors import InvalidRequest
from stalwart.cli import home as homes, local_cluster, output
from stalwart.cli.base import AliasedGroup, client_of, json_option


@click.command("up")
@click.option("--port", type=int, default=None, help="Master port (default 8080, or a free one).")
@click.option("--slots", type=int, default=None, help="CPU slots of the local agent (default: GPUs seen, else 1).")
@click.option("--foreground", is_flag=True, help="Keep master and agent in this terminal.")
def up(port, slots, foreground) -> None:
    """Start a local master and one agent (SQLite under $STALWART_HOME)."""
    if foreground:
        output.info(f"Starting master and agent in the foreground (state in {homes.home()}); Ctrl-C stops them.")
    rec = local_cluster.start(port=port, slots=slots, foreground=foreground)
    if foreground:
        return
    if rec.get("already_running"):
        output.console.print(f"A local cluster is already running: {rec['url']}")
    else:
        output.console.print(f"Master running at {rec['url']} (web: {rec['url']}/, API docs: {rec['url']}/docs/rest-api/)")
        output.console.print(f"State and logs are in {rec['home']}; stop with `stalwart down`.")


@click.command("down")
def down() -> None:
    """Stop the local master and agent."""
    if local_cluster.stop():
        output.console.print("Stopped the local cluster.")
    else:
        output.console.print("No local cluster is running.")


@click.group("master", cls=AliasedGroup)
def master() -> None:
    """Run or inspect the master."""


@master.command("run")
@click.option("--db", "db_url", default=None, help="Database URL (sqlite:///PATH or postgresql://...).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--home", "home_dir", default=None, help="State directory (default $STALWART_HOME).")
@click.option("--url", "advertised_url", default=None, help="Address agents and trials use to reach this master.")
@click.option("--cluster-token", default=None, envvar="STALWART_CLUSTER_TOKEN", help="Token agents must present.")
@click.option("--agent-timeout", type=float, default=30.0, show_default=True, help="Seconds before a silent agent is lost.")
def master_run(db_url, host, port, home_dir, advertised_url, cluster_token, agent_timeout) -> None:
    """Run the master in the foreground."""
    import uvicorn

    from stalwart.master.app import create_app
    from stalwart.master.settings import MasterSettings

    base = pathlib.Path(home_dir) if home_dir else homes.home()
    base.mkdir(parents=True, exist_ok=True)
    settings = MasterSettings(
        db_url=db_url or f"sqlite:///{base / 'master.db'}", home=base, host=host, port=port,
        advertised_url=advertised_url, cluster_token=cluster_token, agent_timeout_s=agent_timeout,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(settings)
    token_path = homes.token_file(base)
    token_path.write_text(app.state.master.cluster_token)
    os.chmod(token_path, 0o600)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)


@click.group("agent", cls=AliasedGroup, aliases={"ls": "list"})
def agent() -> None:
    """Run or list agents."""


@agent.command("run")
@click.option("--master", "master_url", required=True, envvar="STALWART_MASTER", help="Master address.")
@click.option("--token", default=None, envvar="STALWART_CLUSTER_TOKEN", help="The master's cluster token.")
@click.option("--token-file", default=None, type=click.Path(dir_okay=False), help="File holding the cluster token.")
@click.option("--agent-id", default=None, help="Name of this agent (default: host name).")
@click.option("--slots", type=int, default=None, help="Number of CPU slots (default: GPUs seen, else 1).")
@click.option("--resource-pool", default="default", show_default=True)
@click.option("--work-dir", default=None, help="Where trial working directories go.")
def agent_run(master_url, token, token_file, agent_id, slots, resource_pool, work_dir) -> None:
    """Run an agent in the foreground."""
    from stalwart.agent.daemon import Agent
    from stalwart.agent.slots import detect

    if token is None:
        path = pathlib.Path(token_file) if token_file else homes.token_file()
        if not path.is_file():
            raise InvalidRequest(f"no cluster token: pass --token, set STALWART_CLUSTER_TOKEN, or --token-file "
                                 f"(the master writes it to {homes.token_file()})")
        token = path.read_text().strip()
    if slots is not None and slots < 0:
        raise InvalidRequest(f"--slots: expected an integer >= 0, got {slots}")
    count, slot_type = detect(slots)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    a = Agent(master_url, token, pathlib.Path(work_dir or homes.home() / "agent"), agent_id=agent_id,
              slots=count, slot_type=slot_type, resource_pool=resource_pool)

    def _term(_sig, _frame):
        a.stop(kill_running=True)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _term)
    a.run_forever()


@agent.command("list")
@json_option
@click.pass_context
def agent_list(ctx, as_json) -> None:
    """List agents and their slots."""
    data = client_of(ctx).get("/agents")
    if as_json:
        return output.print_json(data)
    output.table(
        ["Agent", "Host", "Pool", "Slots", "Used", "Type", "Enabled", "Connected", "Last seen"],
        [(a["id"], a["hostname"], a["resource_pool"], a["slots"], a["used_slots"], a["slot_type"], a["enabled"],
          a["connected"], output.when(a["last_seen"])) for a in data["agents"]],
    )
