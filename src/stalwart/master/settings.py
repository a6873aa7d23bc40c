"""Settings of one master process (from the CLI flags or a master config file)."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Any

from stalwart.config.master import MasterConfig, SchedulerConfig
from stalwart.context import ArchiveLimits


@dataclass
class MasterSettings:
    """Where the master keeps its state, where it listens, and the cluster's config."""

    db_url: str
    home: pathlib.Path
    host: str = "127.0.0.1"
    port: int = 8080
    determined_port: int | None = None  # Determined's CLI and SDK listen here too (master/determined_api); None: off
    advertised_url: str | None = None
    cluster_token: str | None = None
    checkpoint_storage: dict[str, Any] | None = None  # the master config's `checkpoint_storage` section
    agent_timeout_s: float = 30.0
    scheduler_interval_s: float = 0.5
    task_container_defaults: dict[str, Any] = field(default_factory=dict, repr=False)  # may hold a registry password
    cluster: MasterConfig = field(default_factory=MasterConfig)
    # Build the web UI's in-memory metrics index in a background thread at start (tests turn it off to
    # exercise the pages' fallbacks; docs/ui.md, "Metric series").
    ui_metrics_index: bool = True

    def pool_scheduler(self, pool: str) -> SchedulerConfig:
        """The scheduler settings of `pool` (the defaults for a pool the config does not name)."""
        found = self.cluster.pool(pool)
        return found.scheduler if found else SchedulerConfig()

    @property
    def context_limits(self) -> ArchiveLimits:
        """What a context archive may hold (master config `limits`); the errors name the keys to raise."""
        limits = self.cluster.limits
        return ArchiveLimits(max_size=limits.max_context_size, max_members=limits.max_context_members,
                             size_setting="limits.max_context_size in the master config",
                             members_setting="limits.max_context_members in the master config")

    @property
    def url(self) -> str:
        """The URL agents and trials reach the master at."""
        if self.advertised_url:
            return self.advertised_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def default_checkpoint_storage(self) -> dict[str, Any]:
        """The checkpoint storage experiments get when their config names none: the master's, else its home."""
        if self.checkpoint_storage:
            return dict(self.checkpoint_storage)
        return {"type": "shared_fs", "host_path": str(self.home / "checkpoints")}
