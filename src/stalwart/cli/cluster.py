"""`stalwart up|down`, `stalwart master run`, `stalwart agent run|list`: running the cluster itself."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import pathlib
import signal
from types import FrameType
from typing import Any

import click

from stalwart.api.errors import InvalidRequest
from stalwart.cli import agent_runtime, home as homes, local_cluster, output
from stalwart.cli.base import AliasedGroup, client_of, format_options
from stalwart.config.agent import RUNTIMES


@click.command("up")
@click.option("--port", type=int, default=None, help="Master port (default 8080, or a free one).")
@click.option("--slots", type=int, default=None, help="CPU slots of the local agent (default: GPUs seen, else 1).")
@click.option("--foreground", is_flag=True, help="Keep master and agent in this terminal.")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="Master config file (pools, scheduler, security, ...), kept in $STALWART_HOME for later starts; "
                   "the local agent joins its default compute pool.")
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None,
              help="How the local agent runs tasks: process (default), or docker or podman to run each in its "
                   "`environment.image` (the engine must be running: docs/containers.md).")
@click.option("--slurm", is_flag=True,
              help="Put the master in front of Slurm: no local agent; one resource pool per Slurm partition (Slurm's "
                   "default partition the default pool); each trial runs as a Slurm job. With --config, that "
                   "config's other sections are kept and its resource manager is replaced (a `type: slurm` one's "
                   "keys are kept). Slurm's client tools must reach its slurmctld (SLURM_CONF).")
@click.option("--slurm-user", default=None, metavar="NAME",
              help="With --slurm: the OS user the Slurm jobs of users with no linked OS user run as "
                   "(`resource_manager.user_name`; see `stalwart user link-with-agent-user`).")
def up(port: int | None, slots: int | None, foreground: bool, config_file: str | None, runtime: str | None,
       slurm: bool, slurm_user: str | None) -> None:
    """Start a local cluster: a master and one agent.

    Both run in the background (in this terminal with --foreground), with their SQLite database, logs and cluster
    token under $STALWART_HOME; it prints the master's address. A cluster of this home already running is left as
    it is. `down` stops it; `master run` and `agent run` start the parts of a cluster of several machines.

    The master config given with --config is copied into $STALWART_HOME and used by every later start of this
    home's cluster (`up` without --config, or a command that starts it) until another --config replaces it.
    With --runtime docker or podman the agent runs each trial and command in a container of its image; `down`
    forgets it (the next `up` runs processes unless given --runtime again).

    With --slurm only the master starts, in front of the Slurm cluster its client tools reach: its config, made from
    Slurm's partitions (and --config, if given), is written to $STALWART_HOME/master-slurm.yaml at each such start;
    `down` stops the master and cancels its Slurm jobs; the next `up` without --slurm starts a local cluster again."""
    if slurm:
        _up_slurm(port, slots, foreground, config_file, runtime, slurm_user)
        return
    if slurm_user:
        raise InvalidRequest("--slurm-user: the OS user of Slurm jobs goes with --slurm (`stalwart up --slurm "
                             "--slurm-user NAME`)")
    pool = None  # the config's default compute pool; else the recorded cluster's, else "default"
    if config_file:
        from stalwart.config.master import load_master_config

        cfg = load_master_config(config_file)  # refuse a bad file before starting anything
        port = port or cfg.port
        pool = cfg.default_compute_pool
        config_file = str(pathlib.Path(config_file).resolve())
    if foreground:
        # Ctrl-C must work even when a launching script left SIGINT ignored (`cmd &` without job control).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        output.info(f"Starting master and agent in the foreground (state in {homes.home()}); Ctrl-C stops them.")
    rec = local_cluster.start(port=port, slots=slots, foreground=foreground, config=config_file, pool=pool,
                              runtime=runtime)
    if foreground:
        return
    if rec.get("already_running") and rec.get("same_config"):
        output.console.print(f"A local cluster is already running with this master config: {rec['url']} (nothing "
                             f"to do)")
    elif rec.get("already_running"):
        output.console.print(f"A local cluster is already running: {rec['url']}")
    else:
        url = rec["url"]
        output.console.print(f"Master running at {url} (web: {url}/, API docs: {url}/docs/rest-api/)")
        if rec.get("det_url"):
            output.console.print(f"Determined's own CLI and SDK: DET_MASTER={rec['det_url']} (docs/determined-cli.md)")
        output.console.print(f"State and logs are in {rec['home']}; stop with `stalwart down`.")


def _up_slurm(port: int | None, slots: int | None, foreground: bool, config_file: str | None, runtime: str | None,
              slurm_user: str | None) -> None:
    """`up --slurm`: the master alone, in front of Slurm (stalwart.cli.slurm_up)."""
    from stalwart.cli import slurm_up

    given = [name for name, value in (("--slots", slots), ("--runtime", runtime)) if value is not None]
    if given:
        raise InvalidRequest(f"{' and '.join(given)}: options of the local agent, which `up --slurm` does not start "
                             f"(Slurm's jobs run the trials); leave {' and '.join(given)} out")
    if config_file:  # refuse a bad file before asking Slurm
        from stalwart.config.master import load_master_config

        load_master_config(config_file)
        config_file = str(pathlib.Path(config_file).resolve())
    if foreground:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        output.info(f"Starting the master in front of Slurm in the foreground (state in {homes.home()}); Ctrl-C "
                    f"stops it.")
    rec = local_cluster.start_slurm(port, foreground, lambda base: slurm_up.write_config(base, config_file,
                                                                                         slurm_user))
    if foreground:
        _cancel_slurm_jobs(rec.get("slurm_prefix"))
    elif rec.get("already_running"):
        output.console.print(f"This home's master is already running in front of Slurm: {rec['url']} (nothing to "
                             f"do; `stalwart down` stops it)")
    else:
        url = rec["url"]
        output.console.print(f"Master running at {url} in front of Slurm (web: {url}/, API docs: {url}/docs/rest-api/)"
                             f"; its trials run as Slurm jobs, one resource pool per partition "
                             f"(`stalwart resource-pool list`).")
        output.console.print(f"Its config is {rec.get('config')}; state and logs are in {rec['home']}; stop with "
                             f"`stalwart down`.")


def _cancel_slurm_jobs(prefix: str | None) -> None:
    """Cancel the Slurm jobs of this home's master (`up --slurm`), once it has stopped."""
    if not prefix:
        return
    from stalwart.cli import slurm_up

    cancelled = slurm_up.cancel_jobs(prefix)
    if cancelled:
        output.console.print(f"Cancelled the master's Slurm job(s) {', '.join(cancelled)}.")


@click.command("down")
def down() -> None:
    """Stop the local cluster that `up` started.

    Its agent stops first (its running trials and commands stop with it), then its master. Everything the master
    recorded stays in $STALWART_HOME for the next `up`. A master started with `up --slurm` stops, then its Slurm jobs
    are cancelled."""
    prefix = (homes.read_local_record() or {}).get("slurm_prefix")
    if local_cluster.stop():
        output.console.print("Stopped the local cluster.")
    else:
        output.console.print("No local cluster is running.")
    _cancel_slurm_jobs(prefix)


@click.group("master", cls=AliasedGroup)
def master() -> None:
    """Run the master: the cluster's API, scheduler and web UI.

    For a cluster of several machines; `up` starts a local master and agent for you."""


@master.command("run")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="Master config file (Determined's master.yaml format); flags given here override it.")
@click.option("--db", "db_url", default=None, help="Database URL (sqlite:///PATH or postgresql://...).")
@click.option("--host", default=None, help="Interface to listen on (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port (default 8080).")
@click.option("--home", "home_dir", default=None, help="State directory (default $STALWART_HOME).")
@click.option("--url", "advertised_url", default=None, help="Address agents and trials use to reach this master.")
@click.option("--cluster-token", default=None, envvar="STALWART_CLUSTER_TOKEN", help="Token agents must present.")
@click.option("--agent-timeout", type=float, default=None, help="Seconds before a silent agent is lost (default 30).")
@click.option("--determined-port", type=click.IntRange(1, 65535), default=None,
              help="Also serve Determined's own CLI and SDK on this port (docs/determined-cli.md).")
def master_run(config_file: str | None, db_url: str | None, host: str | None, port: int | None, home_dir: str | None,
               advertised_url: str | None, cluster_token: str | None, agent_timeout: float | None,
               determined_port: int | None) -> None:
    """Run a master in the foreground until it is stopped.

    It serves the API, the web UI and the scheduler on --host:--port, keeps its state in --db (SQLite under --home
    by default, or PostgreSQL) and writes its cluster token for agents to $STALWART_HOME (or --home). `up` runs
    one in the background with a local agent."""
    from stalwart.config.master import MasterConfig, load_master_config
    from stalwart.master.app import create_app
    from stalwart.master.settings import MasterSettings

    cfg = load_master_config(config_file) if config_file else MasterConfig()
    base = pathlib.Path(home_dir) if home_dir else homes.home()
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)  # its database, cluster token and logs: no task (of any OS user) may read them
    host = host or cfg.host or "127.0.0.1"
    port = port or cfg.port or 8080
    settings = MasterSettings(
        db_url=db_url or cfg.db_url or f"sqlite:///{base / 'master.db'}", home=base, host=host, port=port,
        advertised_url=advertised_url, cluster_token=cluster_token,
        agent_timeout_s=agent_timeout or cfg.agent_timeout or 30.0, checkpoint_storage=cfg.checkpoint_storage,
        task_container_defaults=cfg.task_container_defaults, cluster=cfg,
        determined_port=determined_port or cfg.determined_api_port,
    )
    _private_sqlite_file(settings.db_url)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if cfg.ignored_keys:
        logging.getLogger("stalwart.master").warning("master config keys not used by Stalwart: %s",
                                                     ", ".join(cfg.ignored_keys))
    app = create_app(settings)
    token_path = homes.token_file(base)
    token_path.write_text(app.state.master.cluster_token)
    os.chmod(token_path, 0o600)
    # which cluster this home's master serves: `stalwart up` checks that the master answering is this one
    local_cluster.cluster_id_file(base).write_text(app.state.master.cluster_id)
    _serve(app, settings)


def _serve(app: Any, settings: Any) -> None:
    """Serve the master's app on its port and, with `determined_port`, Determined's surface on that one too (one
    server, two sockets: master/determined_api/listener.py). A port that is taken is one line, not a traceback."""
    import uvicorn

    from stalwart.master.app import with_determined_listener
    from stalwart.master.determined_api.listener import bind

    det_port = settings.determined_port
    served = with_determined_listener(app, det_port) if det_port else app
    # WebSockets (the task proxy's: Jupyter kernels, terminals) through the websockets library's sans-I/O protocol:
    # uvicorn's "auto" finds no implementation it can use with websockets 14+
    config = uvicorn.Config(served, host=settings.host, port=settings.port, log_level="warning",
                            timeout_graceful_shutdown=3, ws="websockets-sansio")
    try:
        sockets = [bind(settings.host, settings.port)] + ([bind(settings.host, det_port)] if det_port else [])
    except OSError as err:
        raise click.ClickException(f"{err.strerror}: stop what holds it, or choose another port") from None
    uvicorn.Server(config).run(sockets=sockets)


def _private_sqlite_file(db_url: str) -> None:
    """A SQLite database file is readable by the master's user only (made empty, so, when it does not exist yet;
    SQLite gives its -wal and -shm files the same mode)."""
    if not db_url.startswith("sqlite:///") or ":memory:" in db_url:
        return
    path = pathlib.Path(db_url[len("sqlite:///"):].split("?", 1)[0])
    with contextlib.suppress(OSError):  # a path the master cannot write: its own error says so when it opens it
        path.touch(mode=0o600, exist_ok=True)
        os.chmod(path, 0o600)


@click.group("agent", cls=AliasedGroup, aliases={"ls": "list"})
def agent() -> None:
    """Run, list, enable, disable or revoke agents.

    An agent runs the tasks the master gives it on its slots (GPUs, or CPU slots). `disable` and `enable` decide
    whether the scheduler may use one; `revoke` cuts one off the cluster. `a` is short for `agent`."""


@agent.command("run")
@click.option("--master", "master_url", required=True, envvar="STALWART_MASTER", help="Master address.")
@click.option("--token", default=None, envvar="STALWART_CLUSTER_TOKEN",
              help="The master's cluster token: only to enroll (an enrolled agent presents its own credential, kept "
                   "in its work directory).")
@click.option("--token-file", default=None, type=click.Path(dir_okay=False), help="File holding the cluster token.")
@click.option("--agent-id", default=None, help="Name of this agent (default: host name).")
@click.option("--slots", type=int, default=None, help="Number of CPU slots (default: GPUs seen, else 1).")
@click.option("--resource-pool", default="default", show_default=True,
              help="The resource pool this agent's slots join (one of the master config's pools).")
@click.option("--work-dir", default=None, help="Where trial working directories go.")
@click.option("--log-buffer-mib", type=float, default=64.0, show_default=True, envvar="STALWART_AGENT_LOG_BUFFER_MIB",
              help="Log text each trial may have waiting for the master before its output blocks.")
@click.option("--log-block-timeout", type=float, default=30.0, show_default=True,
              envvar="STALWART_AGENT_LOG_BLOCK_TIMEOUT",
              help="Seconds a trial's output may stay blocked on a full log buffer before lines are dropped "
                   "(and counted in an 'N lines dropped' line).")
@click.option("--keep-work-dirs", type=int, default=0, show_default=True, envvar="STALWART_AGENT_KEEP_WORK_DIRS",
              help="Work directories of ended allocations to keep, the most recent ones, for debugging "
                   "(0: each goes as soon as its exit has reached the master).")
@click.option("--config", "config_file", default=None, type=click.Path(dir_okay=False),
              help="Agent config file (YAML): `task_env_passthrough`, the variables of the agent's environment its "
                   "tasks get too (docs/scheduling.md, \"The environment of a task\").")
@click.option("--task-env-passthrough", "passthrough", multiple=True, metavar="PATTERN",
              help="A variable of the agent's environment its tasks get too, or a glob such as 'HF_*'; repeat it. "
                   "Replaces the config's list (default: LD_LIBRARY_PATH, CUDA_*, NCCL_* and the proxy variables).")
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None,
              help="How tasks run: as processes in this agent's Python (process, the default), or in containers of "
                   "their `environment.image` on Docker or Podman (docs/containers.md). Else the config's `runtime`.")
@click.option("--engine-url", default=None, metavar="URL",
              help="The container engine's socket, e.g. unix:///run/podman/podman.sock (default: $DOCKER_HOST or "
                   "/var/run/docker.sock for docker; Podman's rootful or rootless socket). Else the config's "
                   "`container_engine_url`.")
@click.option("--harness-bundles", default=None, metavar="DIR", envvar=agent_runtime.HARNESS_BUNDLES_ENV,
              help="Stalwart's harness for containers' Pythons, built beforehand with `agent harness-bundle --dest "
                   "DIR` (for agents that reach no package index). Else the config's `harness_bundles`.")
def agent_run(master_url: str, token: str | None, token_file: str | None, agent_id: str | None, slots: int | None,
              resource_pool: str, work_dir: str | None, log_buffer_mib: float, log_block_timeout: float,
              keep_work_dirs: int, config_file: str | None, passthrough: tuple[str, ...], runtime: str | None,
              engine_url: str | None, harness_bundles: str | None) -> None:
    """Run an agent in the foreground until it is stopped.

    It enrolls with the master at --master (with the cluster token, only the first time), then starts the tasks
    the master gives it on its slots and reports their output and exits; SIGTERM kills its running tasks and
    stops it. `up` runs one beside a local master."""
    from stalwart.agent.daemon import Agent
    from stalwart.agent.slots import detect
    from stalwart.config.agent import AgentConfig, load_agent_config

    agent_config = load_agent_config(config_file) if config_file else AgentConfig()

    work = pathlib.Path(work_dir or homes.home() / "agent")
    token = token or _cluster_token(token_file)
    if slots is not None and slots < 0:
        raise InvalidRequest(f"--slots: expected an integer >= 0, got {slots}")
    if not (math.isfinite(log_buffer_mib) and log_buffer_mib > 0):
        raise InvalidRequest(f"--log-buffer-mib: expected a number of MiB > 0 (e.g. 64), got {log_buffer_mib}")
    if not (math.isfinite(log_block_timeout) and log_block_timeout >= 0):
        raise InvalidRequest(f"--log-block-timeout: expected seconds >= 0 (e.g. 30), got {log_block_timeout}")
    if keep_work_dirs < 0:
        raise InvalidRequest(f"--keep-work-dirs: expected a number of directories >= 0, got {keep_work_dirs}")
    count, slot_type = detect(slots)
    chosen = agent_runtime.choose(runtime, engine_url, harness_bundles, agent_config)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    a = Agent(master_url, token, work, agent_id=agent_id,
              slots=count, slot_type=slot_type, resource_pool=resource_pool,
              log_buffer_bytes=max(1, int(log_buffer_mib * 1024 * 1024)), log_block_timeout=log_block_timeout,
              keep_work_dirs=keep_work_dirs,
              task_env_passthrough=passthrough or agent_config.task_env_passthrough, runtime=chosen.name,
              engine_url=chosen.engine_url)
    agent_runtime.check_engine(chosen.name, a.launcher.engine_url)  # a container engine that does not answer: refused

    def _term(_sig: int, _frame: FrameType | None) -> None:
        a.stop(kill_running=True)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _term)
    a.run_forever()


def _cluster_token(token_file: str | None) -> str | None:
    """The cluster token to enroll with: from --token-file, else the master home's file, else None (an agent that
    has enrolled needs none: it keeps its own credential in its work directory, and says so if it has none)."""
    path = pathlib.Path(token_file) if token_file else homes.token_file()
    if path.is_file():
        return path.read_text().strip()
    if token_file is not None:
        raise InvalidRequest(f"--token-file {token_file}: no such file (the master writes its cluster token to "
                             f"{homes.token_file()})")
    return None


@agent.command("list")
@format_options
@click.pass_context
def agent_list(ctx: click.Context, fmt: output.Format) -> None:
    """List agents with their pool, slots and state.

    A row per agent: host, resource pool, slots (and how many are in use), slot type, whether it is enabled,
    draining and connected, and when it was last heard from. `slot list` shows which task holds each slot."""
    data = client_of(ctx).list_agents()
    output.emit(
        fmt, ["Agent", "Host", "Pool", "Slots", "Used", "Type", "Enabled", "Draining", "Connected", "Last seen"],
        [(a.id, a.hostname, a.resource_pool, a.slots, a.used_slots, a.slot_type, a.enabled, a.draining, a.connected,
          output.when(a.last_seen)) for a in data.agents], json_data=data,
    )


def _agent_ids(ctx: click.Context, agent_id: str | None, all_agents: bool) -> list[str]:
    if bool(agent_id) == bool(all_agents):
        raise InvalidRequest("give one agent id, or --all")
    if agent_id:
        return [agent_id]
    return [a.id for a in client_of(ctx).list_agents().agents]


@agent.command("enable")
@click.argument("agent_id", required=False)
@click.option("--all", "all_agents", is_flag=True, help="Every agent.")
@click.pass_context
def agent_enable(ctx: click.Context, agent_id: str | None, all_agents: bool) -> None:
    """Let the scheduler use a disabled agent again.

    Undoes `disable` for AGENT_ID (or every agent with --all): new tasks may start on its slots from the next
    scheduling pass."""
    for a in _agent_ids(ctx, agent_id, all_agents):
        client_of(ctx).enable_agent(a)
        output.console.print(f"Enabled agent {a}.")


@agent.command("disable")
@click.argument("agent_id", required=False)
@click.option("--all", "all_agents", is_flag=True, help="Every agent.")
@click.option("--drain", is_flag=True, help="Let its running tasks finish; start nothing new there.")
@click.pass_context
def agent_disable(ctx: click.Context, agent_id: str | None, all_agents: bool, drain: bool) -> None:
    """Keep new tasks off an agent, or empty it.

    The scheduler starts nothing more on AGENT_ID (or on every agent with --all). Without --drain its running
    trials are preempted (they checkpoint and go back to the queue) and its commands are killed; with --drain they
    run to their end. The agent stays connected; `enable` undoes it, `revoke` cuts it off."""
    how = "draining: its running tasks finish" if drain else "its trials are preempted and commands killed"
    for a in _agent_ids(ctx, agent_id, all_agents):
        client_of(ctx).disable_agent(a, drain=drain)
        output.console.print(f"Disabled agent {a} ({how}).")


@agent.command("credentials")
@format_options
@click.pass_context
def agent_credentials(ctx: click.Context, fmt: output.Format) -> None:
    """List the agents' credentials and when each was used.

    Admins only. A row per agent id: its credential's state, when it was created, last used and revoked, whether
    it may enroll again and whether the agent is registered; never the credential itself. `revoke` cuts one
    off."""
    data = client_of(ctx).list_agent_credentials()
    output.emit(fmt, ["Agent", "Credential", "Created", "Last used", "Revoked", "May re-enroll", "Registered"],
                [(c.agent_id, c.state, output.when(c.created_at), output.when(c.last_used),
                  output.when(c.revoked_at), c.reenroll, c.registered) for c in data.credentials], json_data=data)


@agent.command("revoke")
@click.argument("agent_id")
@click.option("--reenroll", is_flag=True,
              help="Let this agent id enroll again with the cluster token (e.g. its credential file was lost).")
@click.pass_context
def agent_revoke(ctx: click.Context, agent_id: str, reenroll: bool) -> None:
    """Cut an agent off the cluster by revoking its credential.

    Admins only. AGENT_ID's next call is refused, and after the agent timeout it is counted lost (its trials
    resume elsewhere from their checkpoints). With --reenroll the id may enroll again with the cluster token;
    without it, it cannot. `disable` only keeps new tasks off an agent."""
    client_of(ctx).revoke_agent(agent_id, reenroll=reenroll)
    again = ("it may enroll again with the cluster token" if reenroll
             else "the cluster token cannot enroll this id again")
    output.console.print(f"Revoked agent {agent_id}'s credential: it is cut off from its next call; its running tasks "
                         f"are counted lost after the agent timeout; {again}.")


agent.add_command(agent_runtime.harness_bundle_command)


@click.group("slot", cls=AliasedGroup, aliases={"ls": "list"})
def slot() -> None:
    """List the cluster's slots and what uses them.

    A slot is one GPU (or one CPU slot) of an agent; each task holds whole slots. `s` is short for `slot`."""


@slot.command("list")
@format_options
@click.pass_context
def slot_list(ctx: click.Context, fmt: output.Format) -> None:
    """List every slot of every agent and the task using it.

    A row per slot: agent, slot id, type, whether it is enabled and draining, and the allocation and task
    holding it (empty when free). `agent list` counts them per agent."""
    data = client_of(ctx).list_slots()
    output.emit(fmt, ["Agent", "Slot", "Type", "Enabled", "Draining", "Allocation", "Task"],
                [(s.agent_id, s.slot_id, s.type, s.enabled, s.draining, s.allocation_id or "", s.task_id or "")
                 for s in data.slots], json_data=data)
