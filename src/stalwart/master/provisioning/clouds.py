"""Each elastic pool's `Provider`, kept across passes in `Master.engine_links`, and the user-data an instance boots
with: the pool's `startup_script`, then `stalwart agent run` against this master with the instance's own join
credential in a 0600 file (never the cluster token)."""

from __future__ import annotations

import shlex

from stalwart.config.master import PoolConfig
from stalwart.config.provider import ProviderConfig
from stalwart.master.service import Master
from stalwart.rm.elastic import Provider
from stalwart.rm.elastic.aws import AwsProvider
from stalwart.rm.elastic.gcp import GcpProvider


def provider_of(m: Master, pool: PoolConfig) -> Provider:
    """The pool's provider, built once per master process."""
    key = f"provider:{pool.name}"
    found = m.engine_links.get(key)
    if isinstance(found, (AwsProvider, GcpProvider)):
        return found
    if pool.provider is None:
        raise ValueError(f"pool {pool.name} has no provider: it is not an elastic pool")
    settings = pool.provider.settings
    made: Provider = (AwsProvider(settings, pool.name, m.cluster_id) if pool.provider.type == "aws"
                      else GcpProvider(settings, pool.name, m.cluster_id))
    m.engine_links[key] = made
    return made


def user_data(m: Master, pool: str, provider: ProviderConfig, agent_id: str, join_credential: str) -> str:
    """The instance's startup script: the pool's startup script, then its agent, enrolling once with
    `join_credential` (single-use, expiring after max_agent_starting_period), in `agent_work_dir/<agent id>`."""
    settings = provider.settings
    work = f"{settings['agent_work_dir'].rstrip('/')}/{agent_id}"
    token_file = f"{work}/join-credential"
    command = [*shlex.split(settings["agent_command"]), "agent", "run",
               "--master", provider.master_url or m.settings.url, "--token-file", token_file,
               "--agent-id", agent_id, "--resource-pool", pool, "--slots", str(provider.instance_slots),
               "--work-dir", work]
    return "\n".join([
        "#!/bin/sh",
        f"# A Stalwart elastic agent of pool {pool}, written by the master's provisioner (docs/elastic-agents.md).",
        settings["startup_script"],
        "set -e",
        "umask 077",
        f"mkdir -p {shlex.quote(work)}",
        f"printf '%s' {shlex.quote(join_credential)} > {shlex.quote(token_file)}",
        f"exec {shlex.join(command)}",
        "",
    ])
