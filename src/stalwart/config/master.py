"""The master config file (Determined's `master.yaml`): port, db, checkpoint storage, resource manager, pools, limits.

`load_master_config` validates every key and raises ConfigError naming the first bad field in its
message (all of them in `details`). A pool's `scheduler` section replaces the cluster one as a whole:
what it leaves out takes the code defaults, never the cluster section's values. Determined's old
top-level `scheduler`/`provisioner` format is read as the cluster scheduler of one pool, `default`. The keys
and their checks are `stalwart.config.master_schema`'s; this module holds the typed config made from them.
"""

from __future__ import annotations

import pathlib
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import yaml

from stalwart.api.errors import ConfigError
from stalwart.config._schema import Problems, check_section
from stalwart.config.container_defaults import ContainerDefaults, defaults_of, merge_over
from stalwart.config.container_policy import ContainerPolicy
from stalwart.config.kubernetes import KubernetesConfig
from stalwart.config.master_schema import (
    CREATOR_ROLE_IDS,
    DEFAULT_MAX_CONTEXT_MEMBERS,
    DEFAULT_MAX_CONTEXT_SIZE,
    DEFAULT_MAX_REQUEST_BODY,
    DEFAULT_RETENTION_SCHEDULE,
    IGNORED_MASTER_KEYS,
    MASTER_SPEC,
    OIDC_DEFAULT_SCOPES,
    cross_checks,
)
from stalwart.config.provider import ProviderConfig, duration_s
from stalwart.config.slurm import SlurmConfig
from stalwart.config.source import read_config_file


@dataclass(frozen=True)
class SchedulerConfig:
    type: str = "priority"
    fitting_policy: str = "best"
    preemption: bool = False
    default_priority: int = 42

    @staticmethod
    def of(section_: dict[str, Any] | None) -> SchedulerConfig:
        if not section_:
            return SchedulerConfig()
        prio = section_.get("priority") or {}
        return SchedulerConfig(section_["type"], section_["fitting_policy"], bool(prio.get("preemption", False)),
                               int(prio.get("default_priority", 42)))


@dataclass(frozen=True)
class PoolConfig:
    name: str
    description: str = ""
    scheduler: SchedulerConfig = SchedulerConfig()
    # the keys the pool gives (checked); repr=False: registry_auth's password is a secret, never logged
    task_container_defaults: dict[str, Any] = field(default_factory=dict, repr=False)
    allow_root_tasks: bool | None = None  # None: security.allow_root_tasks decides
    task_container_policy: dict[str, Any] = field(default_factory=dict)  # the keys the pool gives (checked)
    provider: ProviderConfig | None = None  # an elastic pool's cloud (config/provider.py); None: agents join it
    kubernetes_namespace: str | None = None  # a Kubernetes pool's namespace (default: resource_manager's)


@dataclass(frozen=True)
class LimitsConfig:
    """What the master takes in: request body bytes, and the members and file bytes of a context archive."""

    max_request_body: int = DEFAULT_MAX_REQUEST_BODY
    max_context_members: int = DEFAULT_MAX_CONTEXT_MEMBERS
    max_context_size: int = DEFAULT_MAX_CONTEXT_SIZE

    @staticmethod
    def of(section_: dict[str, Any] | None) -> LimitsConfig:
        return LimitsConfig(**section_) if section_ else LimitsConfig()


@dataclass(frozen=True)
class LoginBackoffConfig:
    """How wrong passwords are slowed (`security.login_backoff`; times in seconds; docs/users.md)."""

    free_failures: int = 5
    free_failures_per_address: int = 50
    base_delay: float = 1.0
    max_delay: float = 30.0
    forget_after: float = 60.0
    max_tracked: int = 10_000
    concurrent_checks: int = 4
    queued_checks: int = 32

    @staticmethod
    def of(section_: dict[str, Any] | None) -> LoginBackoffConfig:
        return LoginBackoffConfig(**section_) if section_ else LoginBackoffConfig()


@dataclass(frozen=True)
class SecurityConfig:
    """Who may use the cluster: the password the bootstrap accounts (admin, determined) start with, and how
    permissions are decided (`authz.type`: basic, or rbac for roles)."""

    initial_user_password: str = ""
    authz_type: str = "basic"
    login_backoff: LoginBackoffConfig = LoginBackoffConfig()
    authz_explicit: bool = False  # `authz.type` was given (basic by default is not basic by choice)
    allow_root_tasks: bool = False  # tasks may run as uid 0 or gid 0 (docs/workspaces.md)
    workspace_creator_role: str | None = "WorkspaceAdmin"  # what a workspace's creator gets on it (rbac mode)


@dataclass(frozen=True)
class OidcConfig:
    """Single sign-on through an OpenID Connect provider (docs/sso.md); `enabled` False: password logins only."""

    enabled: bool = False
    provider: str = "OIDC"
    issuer: str = ""  # idp_sso_url
    master_url: str = ""  # idp_recipient_url: the provider sends browsers back to <master_url>/oidc/callback
    client_id: str = ""
    client_secret: str = ""
    authentication_claim: str = "email"
    groups_claim: str = "groups"
    display_name_claim: str = ""
    auto_provision_users: bool = True
    scopes: tuple[str, ...] = OIDC_DEFAULT_SCOPES

    @staticmethod
    def of(section_: dict[str, Any] | None) -> OidcConfig:
        if not section_ or not section_.get("enabled"):
            return OidcConfig()
        return OidcConfig(
            enabled=True, provider=section_["provider"], issuer=section_["idp_sso_url"].rstrip("/"),
            master_url=section_["idp_recipient_url"].rstrip("/"), client_id=section_["client_id"],
            client_secret=section_.get("client_secret") or "",
            authentication_claim=section_["authentication_claim"],
            groups_claim=section_.get("groups_claim") or section_.get("groups_attribute_name") or "groups",
            display_name_claim=section_.get("display_name_attribute_name") or "",
            auto_provision_users=section_["auto_provision_users"],
            scopes=tuple(section_.get("scopes") or OIDC_DEFAULT_SCOPES))


@dataclass(frozen=True)
class WebhooksConfig:
    """Webhooks (docs/webhooks.md): the HMAC key of every delivery (a secret: never logged or answered; empty: the
    master keeps one in its home), the hosts targets may name (empty: any), this master's URL for links."""

    signing_key: str = field(default="", repr=False)
    allowed_hosts: tuple[str, ...] = ()
    base_url: str = ""

    @staticmethod
    def of(section_: dict[str, Any] | None) -> WebhooksConfig:
        if not section_:
            return WebhooksConfig()
        return WebhooksConfig(section_.get("signing_key") or "", tuple(section_.get("allowed_hosts") or ()),
                              (section_.get("base_url") or "").rstrip("/"))


@dataclass(frozen=True)
class RetentionConfig:
    """`retention_policy`: how many days trial logs are kept after their trial ended (-1: forever; an experiment's
    `retention_policy.log_retention_days` overrides it) and how often expired ones are deleted."""

    log_retention_days: int = -1
    schedule_s: float = 86400.0

    @staticmethod
    def of(section_: dict[str, Any] | None) -> RetentionConfig:
        if not section_:
            return RetentionConfig()
        days = section_.get("log_retention_days")
        return RetentionConfig(-1 if days is None else days,
                               duration_s(section_.get("schedule") or DEFAULT_RETENTION_SCHEDULE) or 86400.0)


@dataclass(frozen=True)
class MasterConfig:
    pools: tuple[PoolConfig, ...] = (PoolConfig("default"),)
    default_compute_pool: str = "default"
    default_aux_pool: str = "default"
    resource_manager: str = "agent"  # resource_manager.type: the manager of every pool (docs/resource-managers.md)
    slurm: SlurmConfig = SlurmConfig()  # its Slurm keys (type: slurm; docs/slurm.md)
    kubernetes: KubernetesConfig = KubernetesConfig()  # its Kubernetes keys (type: kubernetes; docs/kubernetes.md)
    port: int | None = None
    host: str | None = None
    db_url: str | None = None
    checkpoint_storage: dict[str, Any] | None = None
    # checked: config/container_defaults.py; repr=False: registry_auth's password is a secret, never logged
    task_container_defaults: dict[str, Any] = field(default_factory=dict, repr=False)
    task_container_policy: dict[str, Any] = field(default_factory=dict)  # checked: config/container_policy.py
    agent_timeout: float | None = None
    notebook_timeout: float | None = None  # seconds a notebook may idle when its config says nothing; None: forever
    tensorboard_timeout: float = 300.0  # the same for TensorBoards, as Determined's default
    detached_heartbeat_timeout: float = 300.0  # seconds a detached trial may go without a heartbeat (docs/detached.md)
    proxy_host: str | None = None  # a host name of its own for task traffic (docs/tasks.md); None: the master's
    determined_api_port: int | None = None  # determined_api.port: Determined's CLI and SDK (docs/determined-cli.md)
    agent_enrollment: str = "loopback"  # agents.enrollment: loopback, open or closed
    limits: LimitsConfig = LimitsConfig()
    security: SecurityConfig = SecurityConfig()
    oidc: OidcConfig = OidcConfig()
    webhooks: WebhooksConfig = WebhooksConfig()
    retention: RetentionConfig = RetentionConfig()
    ignored_keys: tuple[str, ...] = ()

    def pool(self, name: str) -> PoolConfig | None:
        return next((p for p in self.pools if p.name == name), None)

    def root_tasks_allowed(self, pool: str | None = None) -> bool:
        """May a task run as uid 0 or gid 0 in `pool` (None: in some pool of this cluster)?"""
        choices = [p.allow_root_tasks for p in self.pools if pool is None or p.name == pool]
        if pool is None:
            return self.security.allow_root_tasks or any(choices)
        found = choices[0] if choices else None
        return self.security.allow_root_tasks if found is None else found

    def container_defaults_section(self, pool: str | None) -> dict[str, Any]:
        """`pool`'s own `task_container_defaults` merged over the cluster's, every key as given (the Kubernetes
        pod specs among them)."""
        found = self.pool(pool) if pool is not None else None
        return merge_over(self.task_container_defaults, found.task_container_defaults if found is not None else {})

    def container_defaults(self, pool: str | None) -> ContainerDefaults:
        """The task container defaults of `pool`: its own `task_container_defaults` merged over the cluster's."""
        return defaults_of(self.container_defaults_section(pool))

    def container_policy(self, pool: str | None) -> ContainerPolicy:
        """What tasks' configs may ask of their containers in `pool` (its own policy's keys, else the cluster's)."""
        found = self.pool(pool) if pool is not None else None
        return ContainerPolicy.of(pool or self.default_compute_pool, self.task_container_policy,
                                  found.task_container_policy if found is not None else None)

    @property
    def pool_names(self) -> list[str]:
        return [p.name for p in self.pools]


def _db_url(db: dict[str, Any] | None) -> str | None:
    if not db:
        return None
    if db.get("url"):
        url: str = db["url"]  # the schema checked it is a string
        return url
    if not db.get("host") and not db.get("name"):
        return None
    auth = urllib.parse.quote(db.get("user") or "postgres")
    if db.get("password"):
        auth += ":" + urllib.parse.quote(db["password"])
    host, port, name = db.get("host") or "127.0.0.1", db.get("port") or 5432, db.get("name") or "determined"
    url = f"postgresql://{auth}@{host}:{port}/{name}"
    return url + (f"?sslmode={db['ssl_mode']}" if db.get("ssl_mode") else "")


def _authz_choices(security: dict[str, Any]) -> dict[str, Any]:
    """SecurityConfig's authz_explicit, allow_root_tasks and workspace_creator_role from the `security` section."""
    authz = security.get("authz") or {}
    creator = authz.get("workspace_creator_assign_role") or {"enabled": True, "role_id": 2}
    return {"authz_explicit": authz.get("type") is not None,
            "allow_root_tasks": bool(security.get("allow_root_tasks")),
            "workspace_creator_role": CREATOR_ROLE_IDS[creator["role_id"]] if creator["enabled"] else None}


def parse_master_config(data: Any, source: str = "master config") -> MasterConfig:
    problems = Problems()
    cfg = check_section(data, "", MASTER_SPEC, problems)
    if not problems:
        cross_checks(cfg, problems)
    if problems:
        first, *rest = problems.details
        raise ConfigError(f"invalid {source}: {first}", details=rest)
    rm = cfg.get("resource_manager") or {}
    cluster = SchedulerConfig.of(rm.get("scheduler") or cfg.get("scheduler"))
    pools = tuple(
        PoolConfig(p["pool_name"], p.get("description") or "",
                   SchedulerConfig.of(p["scheduler"]) if p.get("scheduler") else cluster,
                   dict(p.get("task_container_defaults") or {}), p.get("allow_root_tasks"),
                   dict(p.get("task_container_policy") or {}), provider=ProviderConfig.of(p.get("provider")),
                   kubernetes_namespace=p.get("kubernetes_namespace") or None)
        for p in cfg.get("resource_pools") or [{"pool_name": "default"}]
    )
    fallback = "default" if any(p.name == "default" for p in pools) else pools[0].name
    return MasterConfig(
        pools=pools,
        default_compute_pool=rm.get("default_compute_resource_pool") or fallback,
        default_aux_pool=rm.get("default_aux_resource_pool") or fallback,
        resource_manager=rm.get("type") or "agent",
        slurm=SlurmConfig.of(rm),
        kubernetes=KubernetesConfig.of(rm),
        port=cfg.get("port"), host=cfg.get("host"), db_url=_db_url(cfg.get("db")),
        checkpoint_storage=cfg.get("checkpoint_storage"),
        task_container_defaults=dict(cfg.get("task_container_defaults") or {}),
        task_container_policy=dict(cfg.get("task_container_policy") or {}),
        agent_timeout=cfg.get("agent_timeout"),
        notebook_timeout=duration_s(cfg["notebook_timeout"]) if cfg.get("notebook_timeout") is not None else None,
        tensorboard_timeout=duration_s(cfg.get("tensorboard_timeout", 300)) or 300.0,
        detached_heartbeat_timeout=duration_s(cfg.get("detached_heartbeat_timeout", 300)) or 300.0,
        proxy_host=cfg.get("proxy_host") or None,
        determined_api_port=(cfg.get("determined_api") or {}).get("port"),
        agent_enrollment=(cfg.get("agents") or {}).get("enrollment") or "loopback",
        limits=LimitsConfig.of(cfg.get("limits")),
        security=SecurityConfig(
            (cfg.get("security") or {}).get("initial_user_password") or cfg.get("initial_user_password") or "",
            ((cfg.get("security") or {}).get("authz") or {}).get("type") or "basic",
            login_backoff=LoginBackoffConfig.of((cfg.get("security") or {}).get("login_backoff")),
            **_authz_choices(cfg.get("security") or {})),
        oidc=OidcConfig.of(cfg.get("oidc")),
        webhooks=WebhooksConfig.of(cfg.get("webhooks")),
        retention=RetentionConfig.of(cfg.get("retention_policy")),
        ignored_keys=tuple(k for k in IGNORED_MASTER_KEYS if cfg.get(k) is not None),
    )


def load_master_config(path: str | pathlib.Path) -> MasterConfig:
    """Read and validate a master config file; ConfigError (one line naming the field) if it is wrong."""
    p = pathlib.Path(path)
    text = read_config_file(p, "master config")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError(f"invalid master config {p}: not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    return parse_master_config(data or {}, f"master config {p}")
