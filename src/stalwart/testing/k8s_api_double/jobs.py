"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

The double's Job controller: each Job gets pods from its template (named `<job>-<5 random characters>`, with the
template's labels, `job-name`/`controller-uid` labels and an ownerReference), `parallelism` of them at a time,
until `completions` succeed (Complete) or more than `backoffLimit` fail (Failed, BackoffLimitExceeded: its
active pods are deleted). A pod deleted before it ended counts as failed. Deleting a Job with
propagationPolicy Background or Foreground deletes its pods (and so does `ttlSecondsAfterFinished` once it has
passed), and the garbage collector of `cluster.py` its other dependents (secrets); Orphan (batch/v1's default,
as on the real server) leaves them all and drops their ownerReference. No indexed completion mode, no suspend,
no pod failure policy, no activeDeadlineSeconds.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable

from stalwart.testing.k8s_api_double.admission import default_pod
from stalwart.testing.k8s_api_double.objects import (
    ApiError,
    JsonObject,
    now_timestamp,
    random_suffix,
    success_status,
)
from stalwart.testing.k8s_api_double.scheduler import TERMINAL_PHASES
from stalwart.testing.k8s_api_double.store import ObjectStore

PodDeleter = Callable[[str, str, float | None], JsonObject]  # namespace, name, grace seconds


class JobController:
    """One `sync` pass reconciles every Job with the pods it owns."""

    def __init__(self, store: ObjectStore, delete_pod: PodDeleter):
        self.store = store
        self.delete_pod = delete_pod
        self._last_phase: dict[str, dict[str, str]] = {}  # job uid -> pod uid -> phase last seen

    def sync(self, jobs: list[JsonObject], pods: list[JsonObject]) -> None:
        owned: dict[str, list[JsonObject]] = {}
        for pod in pods:
            for reference in pod["metadata"].get("ownerReferences") or []:
                if reference.get("kind") == "Job":
                    owned.setdefault(reference["uid"], []).append(pod)
        for job in jobs:
            self._reconcile(job, owned.get(job["metadata"]["uid"], []))
        live = {job["metadata"]["uid"] for job in jobs}
        for uid in list(self._last_phase):
            if uid not in live:
                del self._last_phase[uid]

    def _reconcile(self, job: JsonObject, pods: list[JsonObject]) -> None:
        metadata = job["metadata"]
        if metadata.get("deletionTimestamp"):
            if not pods:
                self.store.remove("jobs", metadata["namespace"], metadata["name"])
            return
        phases = self._phases(metadata["uid"], pods)
        active = [p for p in pods if p["status"].get("phase") not in TERMINAL_PHASES]
        active = [p for p in active if not p["metadata"].get("deletionTimestamp")]
        succeeded = sum(1 for phase in phases.values() if phase == "Succeeded")
        failed = sum(1 for phase in phases.values() if phase == "Failed")
        if _finished(job):
            self._update_counts(job, len(active), succeeded, failed, None)
            if _ttl_expired(job):
                self.delete_job(metadata["namespace"], metadata["name"], "Background")
            return
        spec = job["spec"]
        outcome = None
        if failed > int(spec.get("backoffLimit", 6)):
            outcome = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
            for pod in active:
                self.delete_pod(pod["metadata"]["namespace"], pod["metadata"]["name"], None)
            active = []
        elif _complete(spec, succeeded, len(active)):
            outcome = ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
        else:
            wanted = int(spec.get("parallelism", 1))
            if spec.get("completions") is not None:
                wanted = min(wanted, int(spec["completions"]) - succeeded)
            elif succeeded:
                wanted = 0  # a work-queue Job (no completions): once a pod succeeds, no new pods
            for _ in range(wanted - len(active)):
                active.append(self._create_pod(job))
        self._update_counts(job, len(active), succeeded, failed, outcome)

    def _phases(self, job_uid: str, pods: list[JsonObject]) -> dict[str, str]:
        """Every pod's phase, including pods gone since: a pod removed before it ended counts as Failed."""
        seen = self._last_phase.setdefault(job_uid, {})
        present = {p["metadata"]["uid"] for p in pods}
        for uid, phase in seen.items():
            if uid not in present and phase not in TERMINAL_PHASES:
                seen[uid] = "Failed"
        for pod in pods:
            seen[pod["metadata"]["uid"]] = pod["status"].get("phase", "Pending")
        return seen

    def _create_pod(self, job: JsonObject) -> JsonObject:
        metadata, template = job["metadata"], job["spec"]["template"]
        template_metadata = template.get("metadata") or {}
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": metadata["name"],
            "uid": metadata["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        pod_metadata: JsonObject = {
            "name": (metadata["name"] + "-")[:58] + random_suffix(),
            "labels": dict(template_metadata.get("labels") or {}),
            "ownerReferences": [owner],
        }
        if template_metadata.get("annotations"):
            pod_metadata["annotations"] = dict(template_metadata["annotations"])
        pod = default_pod({"metadata": pod_metadata, "spec": copy.deepcopy(template["spec"])}, metadata["namespace"])
        return self.store.create("pods", metadata["namespace"], pod)

    def _update_counts(
        self, job: JsonObject, active: int, succeeded: int, failed: int, outcome: tuple[str, str, str] | None
    ) -> None:
        status = job.get("status") or {}
        counts = {"active": active, "succeeded": succeeded, "failed": failed}
        if outcome is None and "startTime" in status and all(status.get(k, 0) == v for k, v in counts.items()):
            return  # unchanged: no copy of the Job

        def change(current: JsonObject) -> None:
            status = current.setdefault("status", {})
            status.setdefault("startTime", now_timestamp())
            for key, value in (("active", active), ("succeeded", succeeded), ("failed", failed)):
                if value:
                    status[key] = value
                else:
                    status.pop(key, None)
            if outcome is not None:
                kind, reason, message = outcome
                stamp = now_timestamp()
                condition = {"type": kind, "status": "True", "reason": reason, "message": message}
                status["conditions"] = [{**condition, "lastProbeTime": stamp, "lastTransitionTime": stamp}]
                if kind == "Complete":
                    status["completionTime"] = stamp

        self.store.update("jobs", job["metadata"]["namespace"], job["metadata"]["name"], change)

    def delete_job(self, namespace: str, name: str, propagation: str | None) -> JsonObject:
        """DELETE of a Job: its pods by `propagation` (Orphan when unset, as batch/v1 does)."""
        job = self.store.get("jobs", namespace, name, "batch")
        policy = propagation or "Orphan"
        if policy not in ("Orphan", "Background", "Foreground"):
            raise ApiError(400, f"unknown propagationPolicy {propagation!r}: use Orphan, Background or Foreground")
        uid = job["metadata"]["uid"]
        pods, _ = self.store.list("pods", namespace, copies=False)
        owned = [p for p in pods if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]
        for pod in owned:
            if policy == "Orphan":
                self.store.update("pods", namespace, pod["metadata"]["name"], _drop_owner(uid))
            else:
                self.delete_pod(namespace, pod["metadata"]["name"], None)
        if policy == "Orphan":
            for secret in self.store.list("secrets", namespace, copies=False)[0]:
                if any(r.get("uid") == uid for r in secret["metadata"].get("ownerReferences") or []):
                    self.store.update("secrets", namespace, secret["metadata"]["name"], _drop_owner(uid))
        if policy == "Foreground" and owned:

            def mark(current: JsonObject) -> None:
                current["metadata"]["deletionTimestamp"] = now_timestamp()
                current["metadata"]["deletionGracePeriodSeconds"] = 0
                current["metadata"]["finalizers"] = ["foregroundDeletion"]

            return self.store.update("jobs", namespace, name, mark)
        self.store.remove("jobs", namespace, name)
        return success_status(name, "jobs", "batch", uid)


def _drop_owner(uid: str) -> Callable[[JsonObject], None]:
    def change(pod: JsonObject) -> None:
        references = [r for r in pod["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
        if references:
            pod["metadata"]["ownerReferences"] = references
        else:
            pod["metadata"].pop("ownerReferences", None)

    return change


def _finished(job: JsonObject) -> bool:
    conditions = job.get("status", {}).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


def _ttl_expired(job: JsonObject) -> bool:
    """The TTL-after-finished controller: `spec.ttlSecondsAfterFinished` since the Complete/Failed condition."""
    ttl = job["spec"].get("ttlSecondsAfterFinished")
    if ttl is None:
        return False
    finished = job["status"]["conditions"][0]["lastTransitionTime"]
    since = datetime.datetime.strptime(finished, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    return (datetime.datetime.now(datetime.UTC) - since).total_seconds() >= float(ttl)


def _complete(spec: JsonObject, succeeded: int, active: int) -> bool:
    if spec.get("completions") is None:
        return succeeded >= 1 and active == 0
    return succeeded >= int(spec["completions"])
