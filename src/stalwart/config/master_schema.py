"""The keys of the master config file (Determined's `master.yaml`): each one's check and default, and the checks
across sections. `stalwart.config.master` turns what they accept into a typed `MasterConfig`.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from stalwart.config._schema import (
    Checker,
    Field,
    Problems,
    any_map,
    boolean,
    check_section,
    choice,
    integer,
    is_number,
    list_of,
    number,
    section,
    string,
    type_name,
)
from stalwart.config.container_defaults import check_defaults
from stalwart.config.container_policy import check_policy
from stalwart.config.kubernetes import K8S_RM_KEYS
from stalwart.config.provider import check_provider, cross_check_pools, duration, duration_s
from stalwart.config.slurm import SLURM_RM_KEYS

# Keys Determined accepts that Stalwart reads but does not act on (no TLS, auth, telemetry, ... here).
IGNORED_MASTER_KEYS = [
    "telemetry", "logging", "log", "cluster_name", "observability",
    "cache", "ui_customization", "config_file", "root",
    "integrations", "enable_cors", "launch_error", "feature_switches", "internal", "saml", "scim",
    "reserved_ports", "resource_pools_defaults", "additional_resource_managers"]


def _proxy_host(value: Any, path: str, problems: Problems) -> Any:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?", value):
        problems.add(path, f"expected a host name, with a port if not the default (tasks.example.com or "
                           f"tasks.example.com:8080), got {value!r}")
    return value


def _scheduler_type(value: Any, path: str, problems: Problems) -> Any:
    if value == "round_robin":
        problems.add(path, "round_robin was removed from Determined; use priority (with equal priorities)")
    elif value not in ("priority", "fair_share"):
        problems.add(path, f"expected one of priority, fair_share, got {type_name(value)}")
    return value


SCHEDULER_SPEC = {
    "type": Field(_scheduler_type, default="priority"),
    "fitting_policy": Field(choice("best", "worst"), default="best"),
    "allow_heterogeneous_fits": Field(boolean(), default=False),
    "priority": Field(section({"preemption": Field(boolean(), default=False),
                               "default_priority": Field(integer(1, 99), default=42)}),
                      default=lambda: {"preemption": False, "default_priority": 42}),
}

POOL_SPEC = {
    "pool_name": Field(string(nonempty=True), required=True),
    "description": Field(string(), default=""),
    "scheduler": Field(section(SCHEDULER_SPEC)),
    "task_container_defaults": Field(check_defaults, default=dict),  # merged over the cluster's, key by key
    "task_container_policy": Field(check_policy, default=dict),  # replaces the cluster's, key by key
    "max_aux_containers_per_agent": Field(integer(0)),
    "agent_reconnect_wait": Field(string()),
    "agent_reattach_enabled": Field(boolean()),
    "kubernetes_namespace": Field(string()),
    "provider": Field(check_provider),  # an elastic pool (config/provider.py)
    "allow_root_tasks": Field(boolean()),  # unset: security.allow_root_tasks
}

RESOURCE_MANAGER_TYPES = ("agent", "slurm", "kubernetes")
"""The `resource_manager.type` values this master runs (docs/resource-managers.md); the planned ones are refused."""
_PLANNED_MANAGERS: dict[str, str] = {}
_REFUSED_MANAGERS = {"pbs": "OpenPBS cannot run on this project's build machines, so Stalwart has no tested PBS "
                            "manager (docs/resource-managers.md, \"PBS\"); Slurm (`type: slurm`) is supported"}


def _rm_type(value: Any, path: str, problems: Problems) -> Any:
    """`resource_manager.type`: one this master runs; a planned one is refused saying so."""
    if value in RESOURCE_MANAGER_TYPES:
        return value
    supported = ", ".join(RESOURCE_MANAGER_TYPES)
    if isinstance(value, str) and value in _REFUSED_MANAGERS:
        problems.add(path, f"{value!r} is not supported: {_REFUSED_MANAGERS[value]}")
    elif isinstance(value, str) and value in _PLANNED_MANAGERS:
        problems.add(path, f"{value!r} is not supported yet ({_PLANNED_MANAGERS[value]}); this master runs the "
                           f"resource managers: {supported} (docs/resource-managers.md)")
    else:
        problems.add(path, f"expected one of {supported}, got {type_name(value)}")
    return value


RM_SPEC = {
    "type": Field(_rm_type, default="agent"),
    "scheduler": Field(section(SCHEDULER_SPEC)),
    "default_compute_resource_pool": Field(string(nonempty=True)),  # default: `default`, else the first pool
    "default_aux_resource_pool": Field(string(nonempty=True)),
    "require_authentication": Field(boolean()),
    "client_ca": Field(string()),
    "name": Field(string()),
    "cluster_name": Field(string()),
    "metadata": Field(any_map()),
    **SLURM_RM_KEYS,
    **K8S_RM_KEYS,
}
_ENGINE_KEYS = {"slurm": set(SLURM_RM_KEYS), "kubernetes": set(K8S_RM_KEYS)}

DB_SPEC = {
    "url": Field(string(nonempty=True)),
    "user": Field(string()), "password": Field(string()), "host": Field(string()),
    "port": Field(integer(1, 65535)), "name": Field(string()),
    "ssl_mode": Field(string()), "ssl_root_cert": Field(string()),
}

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")


def size(minimum: int = 1) -> Checker:
    """A byte count: an integer, or a string with a unit (`130MiB`, `1.5 GiB`, `500MB`)."""

    def check(value: Any, path: str, problems: Problems) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            count = value
        else:
            match = _SIZE.match(value.lower()) if isinstance(value, str) else None
            if match is None or match.group(2) not in _UNITS:
                problems.add(path, f"expected a size in bytes (an integer, or a number with a unit such as 130MiB, "
                                   f"2GiB, 500MB), got {type_name(value)}")
                return value
            count = int(float(match.group(1)) * _UNITS[match.group(2)])
        if count < minimum:
            problems.add(path, f"expected a size of at least {minimum} bytes, got {type_name(value)}")
        return count

    return check


MIB = 1024 * 1024
# A 95 MiB context travels base64-encoded (x4/3) inside the JSON of experiment create: 127 MiB, plus the config.
DEFAULT_MAX_REQUEST_BODY = 130 * MIB
DEFAULT_MAX_CONTEXT_MEMBERS = 100_000
# The files of a context, as the CLI measures it before packing (context.MAX_CONTEXT_BYTES).
DEFAULT_MAX_CONTEXT_SIZE = 95 * MIB

LIMITS_SPEC = {
    "max_request_body": Field(size(), default=DEFAULT_MAX_REQUEST_BODY),
    "max_context_members": Field(integer(1), default=DEFAULT_MAX_CONTEXT_MEMBERS),
    "max_context_size": Field(size(), default=DEFAULT_MAX_CONTEXT_SIZE),
}

# Determined's ids of its roles that may be given on one workspace (ClusterAdmin 1 and WorkspaceCreator 3 may not)
CREATOR_ROLE_IDS = {2: "WorkspaceAdmin", 4: "Viewer", 5: "Editor"}


def _creator_role_id(value: Any, path: str, problems: Problems) -> Any:
    if value not in CREATOR_ROLE_IDS or isinstance(value, bool):
        ids = ", ".join(f"{i} ({name})" for i, name in CREATOR_ROLE_IDS.items())
        problems.add(path, f"expected one of the role ids {ids}, got {type_name(value)}")
    return value


CREATOR_ROLE_SPEC = {  # the role the creator of a workspace gets on it (rbac mode), as Determined's
    "enabled": Field(boolean(), default=True),
    "role_id": Field(_creator_role_id, default=2),
}

AUTHZ_SPEC = {
    "type": Field(choice("basic", "rbac")),  # unset: basic (SecurityConfig.authz_explicit tells)
    "workspace_creator_assign_role": Field(section(CREATOR_ROLE_SPEC)),
    # Determined's other authz keys, accepted and not used
    "fallback_type": Field(string()),
    "rbac_ui_enabled": Field(boolean()),
    "strict_job_queue_control": Field(boolean()),
    "strict_ntsc_enabled": Field(boolean()),
}

LOGIN_BACKOFF_SPEC = {  # wrong passwords: the back-off (docs/users.md, master/identity/login_guard.py)
    "free_failures": Field(integer(0, 1000), default=5),  # per user name, before any wait
    "free_failures_per_address": Field(integer(0, 100_000), default=50),  # per client address
    "base_delay": Field(number(exclusive_min=0, maximum=3600), default=1.0),  # seconds: the first wait
    "max_delay": Field(number(exclusive_min=0, maximum=3600), default=30.0),  # seconds: the longest wait
    "forget_after": Field(number(exclusive_min=0, maximum=86400), default=60.0),  # seconds per failure forgotten
    "max_tracked": Field(integer(10, 10_000_000), default=10_000),  # user names (and addresses) remembered
    "concurrent_checks": Field(integer(1, 64), default=4),  # argon2id checks at once (64 MiB each)
    "queued_checks": Field(integer(0, 10_000), default=32),  # checks waiting their turn; beyond: 429
}


def _login_backoff_section(value: Any, path: str, problems: Problems) -> Any:
    cfg = check_section(value, path, LOGIN_BACKOFF_SPEC, problems)
    if is_number(cfg["base_delay"]) and is_number(cfg["max_delay"]) and cfg["max_delay"] < cfg["base_delay"]:
        problems.add(f"{path}.max_delay", f"must be at least base_delay ({cfg['base_delay']}), got {cfg['max_delay']}")
    return cfg


SECURITY_SPEC = {
    "login_backoff": Field(_login_backoff_section),
    "initial_user_password": Field(string()),
    "authz": Field(section(AUTHZ_SPEC)),
    "allow_root_tasks": Field(boolean(), default=False),  # tasks may run as uid 0 or gid 0 (a pool may override)
    "tls": Field(any_map()),
    "ssh": Field(any_map()),
    "default_task": Field(any_map()),
    "token": Field(any_map()),
}

OIDC_DEFAULT_SCOPES = ("openid", "email", "profile")

OIDC_SPEC = {
    "enabled": Field(boolean(), default=False),
    "provider": Field(string(nonempty=True), default="OIDC"),  # the name on the login page's button
    "idp_recipient_url": Field(string()),  # this master's URL as the provider's users reach it
    "idp_sso_url": Field(string()),  # the provider's issuer URL (its /.well-known/openid-configuration)
    "client_id": Field(string()),
    "client_secret": Field(string()),  # empty: a public client (PKCE only)
    "authentication_claim": Field(string(nonempty=True), default="email"),  # the claim that is the user name
    "groups_claim": Field(string(nonempty=True)),
    "groups_attribute_name": Field(string(nonempty=True)),  # Determined's name for groups_claim
    "display_name_attribute_name": Field(string()),
    "auto_provision_users": Field(boolean(), default=True),
    "scopes": Field(list_of(string(nonempty=True), nonempty=True)),
    "scim_authentication_attribute": Field(string()),  # Determined's; no SCIM here
    "always_redirect": Field(boolean()),
    "exclude_groups_scope": Field(boolean()),
}


def _http_url(value: Any) -> bool:
    parts = urllib.parse.urlsplit(value) if isinstance(value, str) else None
    return parts is not None and parts.scheme in ("http", "https") and bool(parts.netloc)


def _oidc_section(value: Any, path: str, problems: Problems) -> Any:
    """The `oidc` section: when enabled, the provider's issuer, this master's URL and the client id are needed."""
    cfg = check_section(value, path, OIDC_SPEC, problems)
    if not cfg.get("enabled"):
        return cfg
    for key, what in (("idp_sso_url", "the provider's issuer URL (https://idp.example.com/realms/x)"),
                      ("idp_recipient_url", "this master's URL as browsers reach it (https://stalwart.example.com)")):
        if not cfg.get(key):
            problems.add(f"{path}.{key}", f"required when oidc is enabled: {what}")
        elif not _http_url(cfg[key]):
            problems.add(f"{path}.{key}", f"expected an http(s) URL, got {type_name(cfg[key])}")
    if not cfg.get("client_id"):
        problems.add(f"{path}.client_id", "required when oidc is enabled: the client id the provider gave Stalwart")
    return cfg


_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


def _allowed_host(value: Any, path: str, problems: Problems) -> Any:
    """A host name (any port) or host:port a webhook's URL may name (`hooks.slack.com`, `10.0.0.5:8443`)."""
    if not isinstance(value, str) or not _HOST.match(value):
        problems.add(path, f"expected a host name or host:port (hooks.example.com, 10.0.0.5:8443), got "
                           f"{type_name(value)}")
        return value
    return value.lower()


def _base_url(value: Any, path: str, problems: Problems) -> Any:
    if not _http_url(value):
        problems.add(path, f"expected this master's http(s) URL as users reach it, got {type_name(value)}")
    return value


WEBHOOKS_SPEC = {  # docs/webhooks.md
    "signing_key": Field(string(nonempty=True)),  # a secret: HMAC key of every delivery (unset: one kept in home)
    "allowed_hosts": Field(list_of(_allowed_host), default=list),  # empty: any host
    "base_url": Field(_base_url),  # links in the payloads (Slack messages)
}

DEFAULT_RETENTION_SCHEDULE = "24h"


def _retention_schedule(value: Any, path: str, problems: Problems) -> Any:
    """`retention_policy.schedule`: how often the master deletes expired trial logs, a duration (Determined also
    takes a cron expression, which Stalwart does not read: it is refused, naming the duration form)."""
    seconds = duration_s(value)
    if seconds is None or seconds <= 0:
        problems.add(path, f"expected a duration greater than zero such as 24h, 30m or 10s (cron expressions are not "
                           f"supported here), got {type_name(value)}")
    return value


RETENTION_SPEC = {  # trial logs' retention (docs/logs.md); an experiment's retention_policy overrides the days
    "log_retention_days": Field(integer(minimum=-1, maximum=32767), default=-1),  # -1: kept forever
    "schedule": Field(_retention_schedule, default=DEFAULT_RETENTION_SCHEDULE),
}

AGENT_ENROLLMENT = ("loopback", "open", "closed")
AGENTS_SPEC = {  # agents joining the cluster (docs/users.md, "Agents and the cluster token")
    # who may enroll a new agent with the cluster token: from this machine only, from anywhere, or nobody
    "enrollment": Field(choice(*AGENT_ENROLLMENT), default="loopback"),
}

MASTER_SPEC = {
    "port": Field(integer(1, 65535)),
    "host": Field(string(nonempty=True)),
    "db": Field(section(DB_SPEC)),
    "checkpoint_storage": Field(any_map()),
    "task_container_defaults": Field(check_defaults, default=dict),  # config/container_defaults.py
    "task_container_policy": Field(check_policy, default=dict),  # config/container_policy.py
    "resource_manager": Field(section(RM_SPEC)),
    "resource_pools": Field(list_of(section(POOL_SPEC))),
    "scheduler": Field(section(SCHEDULER_SPEC)),
    "provisioner": Field(any_map()),
    "agent_timeout": Field(number(minimum=1)),
    # tasks' idle timeouts when their config gives none (tasks/idle.py): notebooks' (none by default), TensorBoards'
    "notebook_timeout": Field(duration()),
    "tensorboard_timeout": Field(duration()),
    # how long a detached script's trial may go without a heartbeat before it is ended in ERROR (docs/detached.md)
    "detached_heartbeat_timeout": Field(duration()),
    "proxy_host": Field(_proxy_host),  # task traffic's own host name (docs/tasks.md, "A host of its own")
    # a second port of the master for Determined's own CLI and SDK (docs/determined-cli.md)
    "determined_api": Field(section({"port": Field(integer(1, 65535))})),
    "agents": Field(section(AGENTS_SPEC)),
    "limits": Field(section(LIMITS_SPEC)),
    "security": Field(section(SECURITY_SPEC)),
    "initial_user_password": Field(string()),  # Determined's older place for security.initial_user_password
    "oidc": Field(_oidc_section),
    "webhooks": Field(section(WEBHOOKS_SPEC)),
    "retention_policy": Field(section(RETENTION_SPEC)),
    **{key: Field(lambda v, p, pr: v) for key in IGNORED_MASTER_KEYS},
}


def _engine_keys(rm: dict[str, Any], problems: Problems) -> None:
    """A key only another engine's manager reads is refused, naming the type it needs."""
    kind = rm.get("type", "agent")
    mine = _ENGINE_KEYS.get(kind, set())
    for other, keys in _ENGINE_KEYS.items():
        if other == kind:
            continue
        for key in sorted(k for k in (set(rm) & keys) - mine if rm[k] not in (None, [], {})):
            problems.add(f"resource_manager.{key}", f"is a key of the {other.capitalize()} resource manager; it "
                                                    f"needs `resource_manager.type: {other}`")


def cross_checks(cfg: dict[str, Any], problems: Problems) -> None:
    """The checks across sections of a config whose every key passed its own: one scheduler place, no old
    provisioner beside pools, pool names unique, the default pools among them."""
    rm = cfg.get("resource_manager") or {}
    if cfg.get("scheduler") and rm.get("scheduler"):
        problems.add("scheduler", "give the scheduler either at the top level (old format) or under "
                                  "resource_manager.scheduler, not both")
    if cfg.get("provisioner") and cfg.get("resource_pools"):
        problems.add("provisioner", "the old top-level provisioner cannot be combined with resource_pools; "
                                    "put it in a pool's `provider`")
    _engine_keys(rm, problems)
    cross_check_pools(cfg, problems)
    names = [p.get("pool_name") for p in cfg.get("resource_pools") or [] if isinstance(p, dict)]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.add(f"resource_pools[{i}].pool_name", f"duplicate pool name {name!r}")
    known = names or ["default"]
    for key in ("default_compute_resource_pool", "default_aux_resource_pool"):
        if rm.get(key) and rm[key] not in known:
            problems.add(f"resource_manager.{key}", f"{rm[key]!r} is not one of the resource pools "
                                                    f"({', '.join(map(str, known))})")
