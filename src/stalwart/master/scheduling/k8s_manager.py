"""The Kubernetes resource manager: each allocation of its pools is one pod per container (each pod a Job), running
the one-shot agent in the task's image (docs/kubernetes.md).

`submit` creates a PENDING gang's pods only when the pool's nodes have room for all of them now (their allocatable
GPUs or CPUs less what this master's pods ask), in queue order, so pods of a gang are not left holding resources
while the rest cannot be placed; if Kubernetes still leaves some unplaced (other tenants' pods) for longer than
`gang_start_timeout`, all of them are deleted and the run queues again. `reconcile` reads the pod informers' caches
(kept current by watches): a run whose pods all run is placed on its one-shot agents `<name>-<rank>`; a waiting pod's
reason is the run's; a pod that fails before its agent joins fails the run with its log's tail; a pod evicted,
deleted or lost under a placed run ends it as a lost node's (re-queued from its checkpoint, uncounted); the pods and
Secret of ended runs are deleted. The rows are the state of record: a restarted master lists the pods again and
finds its runs by label."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from stalwart.api.states import AllocationState as A, ExitReason
from stalwart.master.queries import (
    allocations as allocation_rows,
    engine_jobs,
    workspaces as workspace_rows,
)
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import engine_runs, k8s_capacity, k8s_submit
from stalwart.master.service import Master
from stalwart.rm import Gang, PoolCapacity
from stalwart.rm.kubernetes import KubeError, pods as manifests

log = logging.getLogger(__name__)
Row = Mapping[Any, Any]  # an allocation row (a query's, or `live_with_jobs`' dict)
ENDED_POD_GRACE_S = 30.0  # how long an ended run's pods are given to exit before they are deleted
LOST_REASONS = ("Evicted", "NodeLost", "Preempting", "Shutdown", "Terminated", "DeadlineExceeded")


class KubernetesManager(engine_runs.EngineManager):
    """The Kubernetes manager of `pools`, opened on the master `m` inside the transaction `conn`."""

    type = "kubernetes"

    def __init__(self, m: Master, conn: Conn, pools: Sequence[str]) -> None:
        super().__init__(m, conn, pools)
        self.cfg = m.settings.cluster.kubernetes
        self._links: k8s_submit.KubeLinks | None = None
        self._pods: dict[str, dict[int, dict[str, Any]]] | None = None

    @property
    def links(self) -> k8s_submit.KubeLinks:
        """The master's links to the API, made on first use (a `KubeError` when it cannot be reached)."""
        if self._links is None:
            self._links = k8s_submit.links(self.m)
        return self._links

    def _namespaces(self) -> set[str]:
        """The pools' namespaces and those workspaces are bound to: where this master's pods may be."""
        pools = {k8s_submit.namespace_of(self.m, p) for p in self._pools}
        return pools | workspace_rows.kubernetes_namespaces(self.conn)

    def runs_pods(self) -> dict[str, dict[int, dict[str, Any]]]:
        """Allocation id -> rank -> pod, for this master's pods (read once per opening)."""
        if self._pods is None:
            by_run: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
            for pod in self.links.pods(self.m, self._namespaces()).values():
                lab = (pod.get("metadata") or {}).get("labels") or {}
                if manifests.LABEL_ALLOCATION in lab:
                    by_run[lab[manifests.LABEL_ALLOCATION]][int(lab.get(manifests.LABEL_RANK) or 0)] = pod
            self._pods = dict(by_run)
        return self._pods

    # -- the pass ---------------------------------------------------------------------------------------------------
    def submit(self, gangs: Sequence[Gang]) -> None:
        """Each PENDING gang without pods, in queue order, gets them where all fit now."""
        waiting = [g for g in gangs if g.state == A.PENDING.value and not g.kill_requested]
        submitted = engine_jobs.submitted(self.conn, [g.allocation_id for g in waiting])
        todo = [g for g in waiting if g.allocation_id not in submitted]
        if not todo:
            return
        try:
            room = k8s_capacity.Room.of(self.m, self.links.api.nodes(), self.runs_pods(), self._pools)
        except KubeError as err:  # the API is away: every run waits, saying so
            k8s_submit.warn_unreachable(self.m, err)
            for g in todo:
                engine_runs.wait_reason(self.conn, g, f"the Kubernetes API cannot be reached: {err}")
            return
        for g in sorted(todo, key=lambda g: (g.priority, g.queue_position, g.submitted_at, g.allocation_id)):
            owner = engine_jobs.owner_of(self.conn, g.allocation_id)
            try:
                bound = workspace_rows.kubernetes_namespace_of_project(self.conn, owner["project_id"])
                run = k8s_submit.run_pods(self.m, g, owner["config"], bound)
            except k8s_submit.CannotSubmit as why:
                engine_runs.fail(self.m, self.conn, g.allocation_id, str(why), ExitReason.SETUP_FAILED)
                continue
            short = room.take(g.pool, run)
            if short is not None:
                engine_runs.wait_reason(self.conn, g, short)
                continue
            k8s_submit.submit(self.m, self.conn, self.links.api, run)

    def reconcile(self) -> None:
        """Every live run that has pods against them; then the pods of ended runs are deleted."""
        try:
            by_run = self.runs_pods()
        except KubeError as err:  # the API is away: nothing is decided on no news
            k8s_submit.warn_unreachable(self.m, err)
            return
        reasons: dict[str, str] = {}
        rows = [r for r in allocation_rows.live_with_jobs(self.conn) if r["engine_job_id"] is not None]
        for row in rows:
            if (row["resource_pool"] or self._pools[0]) in self._pools:
                self._follow(row, by_run.get(row["id"], {}), reasons)
        engine_jobs.set_pending_reasons(self.conn, reasons)
        self._delete_ended(by_run, {r["id"] for r in rows})
        engine_jobs.remove_ended_one_shot_agents(self.conn)

    def _follow(self, row: Row, pods: dict[int, dict[str, Any]], reasons: dict[str, str]) -> None:
        expected = _pod_count(pods)
        phases = {rank: _phase(p) for rank, p in pods.items()}
        if row["state"] == A.PENDING.value:
            if row["kill_requested"]:
                return
            ended = [r for r, ph in phases.items() if ph in ("Failed", "Succeeded", "Gone")]
            if ended:
                self._failed_before_joining(row, pods[ended[0]])
            elif len(pods) == expected and all(ph == "Running" for ph in phases.values()):
                self._place(row, pods)
            else:
                self._waiting(row, pods, expected, reasons)
            return
        gone = [r for r in range(expected) if r not in pods or phases[r] in ("Failed", "Gone")
                or (pods[r].get("metadata") or {}).get("deletionTimestamp")]
        if gone:
            pod = pods.get(gone[0])
            self._delete(row)
            engine_runs.lose(self.m, self.conn, row, f"pod {_name(pod) or row['engine_job_id']} is gone under the "
                             f"running trial ({_why_gone(pod)}); the trial resumes from its latest checkpoint")
        elif row["state"] == A.ASSIGNED.value and engine_runs.join_overdue(self.conn, row, self.cfg.job_start_timeout):
            self._delete(row)
            engine_runs.fail(self.m, self.conn, row["id"], f"its pods run, but their agents did not join within "
                             f"job_start_timeout ({self.cfg.job_start_timeout:.0f} s)", ExitReason.EXITED)

    def _place(self, row: Row, pods: dict[int, dict[str, Any]]) -> None:
        nodes = []
        for rank in sorted(pods):
            pod = pods[rank]
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            slots = int(manifests.pod_requests(pod)["cpu" if self.cfg.cpu_slots else "gpu"] /
                        ((self.cfg.cpu_request or 1.0) if self.cfg.cpu_slots else 1.0))
            nodes.append(engine_runs.EngineNode(f"{row['engine_job_id']}-{rank}", spec.get("nodeName") or "?",
                                                status.get("podIP"), slots))
        engine_runs.place(self.m, self.conn, row, nodes, row["resource_pool"] or self._pools[0],
                          "cpu" if self.cfg.cpu_slots else self.cfg.slot_type)

    def _waiting(self, row: Row, pods: dict[int, dict[str, Any]], expected: int, reasons: dict[str, str]) -> None:
        """Why the run's pods do not all run yet (the first pod that waits says); pods placed only in part for
        longer than `gang_start_timeout` are all deleted (the run queues again), and a pod whose container cannot
        start (its image, its configuration) for longer than `job_start_timeout` fails the run."""
        waiting = [(r, p) for r, p in sorted(pods.items()) if _phase(p) != "Running"]
        first = waiting[0][1] if waiting else None
        why = (_unschedulable(first) or _container_waiting(first)) if first is not None else None
        reason = f"pod {_name(first)}: {why}" if why else "waiting for its pods to start"
        if row["pending_reason"] != reason:
            reasons[row["id"]] = reason
        oldest = min((_created(p) for p in pods.values()), default=self._missing_since(row["id"], pods))
        unplaced = [p for _, p in waiting if not (p.get("spec") or {}).get("nodeName")]
        partial = len(pods) < expected or (unplaced and len(unplaced) < len(pods))
        if partial and time.time() - oldest > self.cfg.gang_start_timeout:
            self._delete(row)
            engine_jobs.clear_submitted(self.conn, row["id"])
            self.m.engine_links.pop(f"kubernetes:no-pods:{row['id']}", None)
            reasons[row["id"]] = (f"only some of its {expected} pods could be placed within gang_start_timeout "
                                  f"({self.cfg.gang_start_timeout:.0f} s): all were deleted; it waits for room "
                                  "for all of them at once")
        elif first is not None and not unplaced and _container_waiting(first) and \
                time.time() - oldest > self.cfg.job_start_timeout:
            self._delete(row)
            engine_runs.fail(self.m, self.conn, row["id"], f"{reason}; its container did not start within "
                             f"job_start_timeout ({self.cfg.job_start_timeout:.0f} s)", ExitReason.SETUP_FAILED)

    def _missing_since(self, allocation_id: str, pods: dict[int, dict[str, Any]]) -> float:
        """Since when a submitted run has had no pod at all (its Jobs deleted by someone else, or never made): past
        `gang_start_timeout` it is submitted again, as a run placed in part is."""
        key = f"kubernetes:no-pods:{allocation_id}"
        if pods:
            self.m.engine_links.pop(key, None)
            return time.time()
        return float(self.m.engine_links.setdefault(key, time.time()))

    def _failed_before_joining(self, row: Row, pod: dict[str, Any]) -> None:
        tail = self.links.api.pod_log_tail(pod["metadata"].get("namespace") or self.cfg.default_namespace,
                                           pod["metadata"]["name"])
        why = (f"pod {_name(pod)} ended before its agent joined ({_why_gone(pod)})"
               + (f"; its log ends with:\n{tail}" if tail.strip() else ""))
        self._delete(row)
        engine_runs.fail(self.m, self.conn, row["id"], why, ExitReason.EXITED)

    def _delete(self, row: Row, grace_s: int | None = None) -> None:
        self._delete_run(row["id"], row["engine_job_id"], row["resource_pool"], grace_s)

    def _delete_run(self, allocation_id: str, name: str | None, pool: str | None, grace_s: int | None = None) -> None:
        """The run's Jobs (its pods) and Secret, found by its pods where the informer has them, else by name."""
        pods = self.runs_pods().get(allocation_id, {})
        any_pod = next(iter(pods.values()), None)
        if any_pod is not None:
            namespace = str(any_pod["metadata"].get("namespace") or self.cfg.default_namespace)
            name = name or _job_of(any_pod).rsplit("-", 1)[0]
        else:
            namespace = k8s_submit.namespace_of(self.m, pool)
        if not name:
            return
        try:
            k8s_submit.delete_run(self.links.api, namespace, name, _pod_count(pods), grace_s)
        except KubeError as err:  # still there at the next pass: deleted then
            log.warning("could not delete the pods of %s: %s", allocation_id, err)

    def _delete_ended(self, by_run: dict[str, dict[int, dict[str, Any]]], live: set[str]) -> None:
        """Pods of runs that ended here (or that this master never had) are deleted with their Secrets once their
        containers have exited (at most `ENDED_POD_GRACE_S` after the run ended), so that an eviction the pod's agent
        reported only as a lost node is still named on the run's log; pods already being deleted are left to
        finish."""
        for aid, pods in by_run.items():
            if aid in live or all((p.get("metadata") or {}).get("deletionTimestamp") for p in pods.values()):
                continue
            row = allocation_rows.find(self.conn, aid)
            exited = all(_phase(p) in ("Failed", "Succeeded") for p in pods.values())
            if row is not None and not exited and time.time() - (row["ended_at"] or 0) < ENDED_POD_GRACE_S:
                continue
            if row is not None:
                self._note_disruption(row, pods)
            self._delete_run(aid, None, None)

    def _note_disruption(self, row: Row, pods: dict[int, dict[str, Any]]) -> None:
        """An ended run's pod that Kubernetes took away (evicted, preempted, its node shut down) says so on the
        run's log: its agent saw only a SIGTERM."""
        for pod in pods.values():
            why = _disruption(pod)
            if why:
                engine_runs.note(self.conn, row, f"pod {_name(pod)} was taken away by Kubernetes ({why})", "WARNING")

    # -- asked by the master ----------------------------------------------------------------------------------------
    def capacity(self) -> list[PoolCapacity]:
        return k8s_capacity.capacity(self.m, self.links.api.nodes(), self.runs_pods(), self._pools)


def _pod_count(pods: dict[int, dict[str, Any]]) -> int:
    """How many pods the run has, as its pods' label says (1 when none is seen)."""
    for pod in pods.values():
        count = ((pod.get("metadata") or {}).get("labels") or {}).get(manifests.LABEL_PODS)
        if count:
            return int(count)
    return max([r + 1 for r in pods] or [1])



def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _name(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("metadata") or {}).get("name") or "")


def _job_of(pod: dict[str, Any]) -> str:
    lab = (pod.get("metadata") or {}).get("labels") or {}
    return str(lab.get("job-name") or lab.get("batch.kubernetes.io/job-name") or _name(pod))


def _created(pod: dict[str, Any]) -> float:
    text = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


def _unschedulable(pod: dict[str, Any]) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or cond.get("reason") or "not scheduled yet")
    return None


def _container_waiting(pod: dict[str, Any]) -> str | None:
    """A placed pod's container that cannot start yet: its reason and message (ImagePullBackOff, ...)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") not in (None, "ContainerCreating", "PodInitializing"):
            return f"{waiting['reason']}: {waiting.get('message') or ''}".rstrip(": ")
    return None


def _disruption(pod: dict[str, Any]) -> str | None:
    """Why Kubernetes ended the pod (status reason Evicted, or a DisruptionTarget condition), if it did."""
    status = pod.get("status") or {}
    if status.get("reason") in LOST_REASONS:
        return f"{status['reason']}: {status.get('message') or ''}".rstrip(": ")
    for cond in status.get("conditions") or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return f"{cond.get('reason') or 'DisruptionTarget'}: {cond.get('message') or ''}".rstrip(": ")
    return None


def _why_gone(pod: dict[str, Any] | None) -> str:
    if pod is None:
        return "deleted"
    status = pod.get("status") or {}
    if status.get("reason"):
        return f"{status['reason']}: {status.get('message') or ''}".rstrip(": ")
    for cs in status.get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated")
        if term:
            return f"container exited with code {term.get('exitCode')} ({term.get('reason') or 'Error'})"
    return "being deleted" if (pod.get("metadata") or {}).get("deletionTimestamp") else _phase(pod)
