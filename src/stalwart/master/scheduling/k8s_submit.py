"""Submitting one allocation to Kubernetes (docs/kubernetes.md): its namespace (its workspace's, else the pool's
`kubernetes_namespace`, else `default_namespace`), its pods (the run's slots split by `max_slots_per_pod`, each pod
one Job built by `rm.kubernetes.pods` from the task's image and `environment.pod_spec`, else the pool's
`cpu_pod_spec` / `gpu_pod_spec`), and its single-use join credential: only its hash is kept, and the pods read it
from a Secret.

Also the master's lasting links to the API (`links`): one client and one pod informer per namespace, made on first
use and kept across passes in `Master.engine_links`."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from stalwart.api.states import ExitReason
from stalwart.config.kubernetes import KubernetesConfig
from stalwart.master.identity import tokens
from stalwart.master.queries import engine_jobs
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import engine_runs
from stalwart.master.service import Master
from stalwart.rm import Gang
from stalwart.rm.kubernetes import KubeApi, KubeError, PodInformer, PodSpecError, RunPods, pods as manifests

log = logging.getLogger(__name__)
_LINKS = "kubernetes"
READY_WAIT_S = 10.0
WARN_EVERY_S = 60.0


class CannotSubmit(Exception):
    """This run can never become pods as configured (the message says what to change)."""


@dataclass
class KubeLinks:
    """The master's client of the API and its pod informers (one per namespace in use)."""

    api: KubeApi
    selector: str
    informers: dict[str, PodInformer] = field(default_factory=dict)

    def pods(self, m: Master, namespaces: set[str]) -> dict[str, dict[str, Any]]:
        """Every pod of this master in `namespaces` (name -> pod), as the informers hold them; a namespace seen the
        first time is listed before this answers."""
        out: dict[str, dict[str, Any]] = {}
        for ns in sorted(namespaces):
            informer = self.informers.get(ns)
            if informer is None:
                informer = PodInformer(self.api, ns, self.selector, on_change=m.wake_scheduler).start()
                self.informers[ns] = informer
            if not informer.wait_ready(READY_WAIT_S):
                raise KubeError(0, f"could not list the pods of namespace {ns}: {informer.error or 'no answer'}")
            out.update(informer.snapshot())
        return out


def links(m: Master) -> KubeLinks:
    found = m.engine_links.get(_LINKS)
    if found is None:
        cfg = m.settings.cluster.kubernetes
        prefix = cfg.job_name_prefix.rstrip("-") or "stalwart"
        found = KubeLinks(KubeApi(cfg), f"{manifests.LABEL_MANAGED}={manifests.MANAGED_BY},"
                                        f"{manifests.LABEL_PREFIX}={prefix}")
        m.engine_links[_LINKS] = found
    assert isinstance(found, KubeLinks)
    return found


def warn_unreachable(m: Master, err: KubeError) -> None:
    """Log that the API cannot be reached: once a minute, not once a pass."""
    last = m.engine_links.get("kubernetes:warned", 0.0)
    if time.monotonic() - last >= WARN_EVERY_S:
        m.engine_links["kubernetes:warned"] = time.monotonic()
        log.warning("the Kubernetes API cannot be reached (runs wait until it can): %s", err)


def close_links(m: Master) -> None:
    found = m.engine_links.pop(_LINKS, None)
    if found is not None:
        for informer in found.informers.values():
            informer.stop()
        found.api.close()


def namespace_of(m: Master, pool: str | None) -> str:
    """A pool's namespace: its `kubernetes_namespace`, else the manager's `default_namespace`."""
    found = m.settings.cluster.pool(pool) if pool is not None else None
    own = found.kubernetes_namespace if found is not None else None
    return own or m.settings.cluster.kubernetes.default_namespace


def pool_pod_spec(m: Master, pool: str) -> dict[str, Any]:
    """The pool's default pod spec for the manager's slot type (`cpu_pod_spec` or `gpu_pod_spec`)."""
    key = "cpu_pod_spec" if m.settings.cluster.kubernetes.cpu_slots else "gpu_pod_spec"
    return dict(m.settings.cluster.container_defaults_section(pool).get(key) or {})


def run_name(cfg: KubernetesConfig, allocation_id: str) -> str:
    """The run's base name (its Secret; its Jobs add `-<rank>`): a DNS label however the prefix reads."""
    return f"{cfg.job_name_prefix}{allocation_id}".lower().replace("_", "-").replace(".", "-")[:60]


def master_url(m: Master, cfg: KubernetesConfig) -> str:
    """How pods reach the master: `determined_master_host`/`port` where given, else `master_service_name` (the
    master's Service in its namespace), else its advertised URL."""
    port = cfg.master_port or m.settings.url.rsplit(":", 1)[-1].split("/")[0]
    if cfg.master_host:
        return f"{cfg.master_scheme}://{cfg.master_host}:{port}"
    if cfg.master_service_name:
        return f"{cfg.master_scheme}://{cfg.master_service_name}:{port}"
    return m.settings.url


def _kind(cfg: KubernetesConfig) -> str:
    return "cpu" if cfg.cpu_slots else cfg.slot_type


def _image(config: dict[str, Any], pool_image: str | None, kind: str) -> str:
    image = (config.get("environment") or {}).get("image")
    if isinstance(image, dict):
        image = image.get(kind) or (image.get("gpu") if kind == "cuda" else None)
    if image or pool_image:
        return str(image or pool_image)
    raise CannotSubmit("Kubernetes runs every task in an image, and this one names none: set environment.image (an "
                       "image with Stalwart installed), or task_container_defaults.image for the pool")


def run_pods(m: Master, gang: Gang, config: dict[str, Any], workspace_namespace: str | None = None) -> RunPods:
    """The run's pods as `config` (its experiment's or command's) and its pool ask, in its workspace's namespace
    where it has one; `CannotSubmit` names the fix."""
    cfg = m.settings.cluster.kubernetes
    defaults = m.settings.cluster.container_defaults_section(gang.pool)
    kind = _kind(cfg)
    per_pod = ((config.get("resources") or {}).get("max_slots_per_pod")
               or (defaults.get("kubernetes") or {}).get("max_slots_per_pod") or cfg.max_slots_per_pod)
    try:
        count, slots = manifests.split_slots(gang.slots, per_pod)
    except PodSpecError as err:
        raise CannotSubmit(str(err)) from err
    pool_image = m.settings.cluster.container_defaults(gang.pool).image.get(kind)
    return RunPods(name=run_name(cfg, gang.allocation_id), namespace=workspace_namespace or namespace_of(m, gang.pool),
                   prefix=cfg.job_name_prefix, allocation_id=gang.allocation_id, pool=gang.pool, pods=count,
                   slots_per_pod=slots, slot_type=kind, image=_image(config, pool_image, kind),
                   command=cfg.agent_command, master_url=master_url(m, cfg), cpu_request=cfg.cpu_request,
                   scheduler_name=cfg.default_scheduler,
                   pod_spec=dict((config.get("environment") or {}).get("pod_spec") or pool_pod_spec(m, gang.pool)))


def refusal(m: Master, config: dict[str, Any], pool: str, slots: int) -> str | None:
    """Why new work with `config` could never run as pods (None: it can): what `create` says."""
    gang = Gang(allocation_id="check", job_id="check", pool=pool, slots=slots)
    try:
        run_pods(m, gang, config)
    except CannotSubmit as why:
        return str(why)
    return None


def submit(m: Master, conn: Conn, api: KubeApi, run: RunPods) -> bool:
    """The run's Secret, then its Jobs; False when the API refused (the run failed, or waits with the reason)."""
    token = tokens.new_agent_credential()
    try:
        api.create_secret(run.namespace, manifests.join_secret(run, token))
        for rank in range(run.pods):
            api.create_job(run.namespace, manifests.job(run, rank))
    except KubeError as err:
        delete_run(api, run.namespace, run.name, run.pods)
        if err.status in (0, 409, 429) or err.status >= 500:  # away, busy, or an old run's objects still going
            engine_runs.note_wait(conn, run.allocation_id, f"Kubernetes did not take the pods yet: {err}")
            return False
        engine_runs.fail(m, conn, run.allocation_id, f"Kubernetes refused the pods: {err}", ExitReason.SETUP_FAILED)
        return False
    engine_jobs.set_submitted(conn, run.allocation_id, run.name, tokens.credential_hash(token))
    log.info("allocation %s submitted as %d pod(s) in namespace %s", run.allocation_id, run.pods, run.namespace)
    return True


def delete_run(api: KubeApi, namespace: str, name: str, pods: int, grace_s: int | None = None) -> None:
    """The run's Jobs (and so its pods) and its Secret; what is already gone is fine."""
    for rank in range(pods):
        api.delete_job(namespace, f"{name}-{rank}", grace_s)
    api.delete_secret(namespace, name)
