"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

The double's "kubelet": a bound pod's FIRST container runs as a real local process (its own process group,
stdout and stderr into the pod's log file); the image is recorded but never pulled or used. It keeps the pod's
status as the kubelet would (Running, then Succeeded or Failed with the container's exit code), stops
processes on deletion and eviction (SIGTERM, SIGKILL after the grace period, capped at 10 s in the double),
and removes a deleted pod once its process is gone. Extra containers and init containers are not run;
`restartPolicy` OnFailure/Always containers are not restarted.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pathlib
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from stalwart.testing.k8s_api_double.objects import JsonObject, now_timestamp
from stalwart.testing.k8s_api_double.pod_env import (
    ContainerConfigError,
    ContainerStartError,
    container_argv,
    container_environment,
)
from stalwart.testing.k8s_api_double.store import ObjectStore

MAX_GRACE_SECONDS = 10.0
DEFAULT_GRACE_SECONDS = 30.0


@dataclass
class PodProcess:
    """One pod's running (or ended) container process."""

    process: subprocess.Popen[bytes]
    log_path: pathlib.Path
    started_at: str
    kill_at: float | None = None
    eviction_message: str | None = None


class Kubelet:
    """Runs bound pods as processes and reports their status into the store; `sync` is one pass."""

    def __init__(self, store: ObjectStore, workdir: pathlib.Path, extra_env: Mapping[str, str], api_port: int):
        self.store = store
        self.workdir = workdir
        self.extra_env = dict(extra_env)
        self.api_port = api_port
        self.processes: dict[str, PodProcess] = {}  # by pod uid
        self.log_paths: dict[str, pathlib.Path] = {}  # by pod uid, kept after the process ends

    def sync(self, pods: list[JsonObject], node_names: set[str]) -> None:
        """One pass: start pods bound to a known node, notice exits, end deleted pods."""
        for pod in pods:
            uid = pod["metadata"]["uid"]
            record = self.processes.get(uid)
            if pod["metadata"].get("deletionTimestamp"):
                self._terminate(pod, record)
            elif record is not None:
                self._check_exit(pod, record)
            elif pod["spec"].get("nodeName") in node_names and pod["status"].get("phase") == "Pending":
                try:
                    self._start(pod)
                except (TypeError, KeyError, AttributeError, ValueError) as error:  # a spec the double cannot run
                    problem = f"the Kubernetes API test double cannot run this container: {error!r}"
                    self._update_status(pod, functools.partial(_mark_start_failed, message=problem))
        self._enforce_kill_deadlines()

    def evict(self, pod: JsonObject, message: str) -> None:
        """The kubelet's eviction; a pod that has already ended is left as it is."""
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            return
        record = self.processes.get(pod["metadata"]["uid"])
        if record is None or record.process.poll() is not None:
            self._update_status(pod, lambda p: _mark_evicted(p, message, None))
            return
        record.eviction_message = message
        self._signal(record, signal.SIGTERM, _grace_seconds(pod))

    def reap_orphans(self, live_uids: set[str]) -> None:
        """Kill the processes of pods removed from the API at once (force deletion, node removal)."""
        for uid, record in list(self.processes.items()):
            if uid in live_uids:
                continue
            if record.process.poll() is None:
                _kill_group(record.process, signal.SIGKILL)
            else:
                del self.processes[uid]

    def stop_all(self) -> None:
        for record in self.processes.values():
            if record.process.poll() is None:
                _kill_group(record.process, signal.SIGKILL)
        for record in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                record.process.wait(timeout=5)

    def _start(self, pod: JsonObject) -> None:
        container = pod["spec"]["containers"][0]
        try:
            env = container_environment(self.store, pod, container, self.extra_env, self.api_port)
            argv = container_argv(container, env)
        except ContainerConfigError as error:
            config_problem = str(error)
            self._update_status(pod, lambda p: _mark_waiting(p, "CreateContainerConfigError", config_problem))
            return
        except ContainerStartError as error:
            start_problem = str(error)
            self._update_status(pod, lambda p: _mark_start_failed(p, start_problem))
            return
        metadata = pod["metadata"]
        log_path = self.workdir / "logs" / metadata["namespace"] / f"{metadata['name']}-{metadata['uid'][:8]}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        working_dir = container.get("workingDir") or str(self._pod_dir(metadata))
        pathlib.Path(working_dir).mkdir(parents=True, exist_ok=True)
        self.log_paths[metadata["uid"]] = log_path
        with open(log_path, "ab") as log:
            try:
                process = subprocess.Popen(
                    argv, cwd=working_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            except OSError as error:
                message = f"failed to start container process {argv[0]!r}: {error}"
                self._update_status(pod, lambda p: _mark_start_failed(p, message))
                return
        record = PodProcess(process, log_path, now_timestamp())
        self.processes[metadata["uid"]] = record
        self._update_status(pod, lambda p: _mark_running(p, record))

    def _pod_dir(self, metadata: JsonObject) -> pathlib.Path:
        return self.workdir / "pods" / str(metadata["namespace"]) / f"{metadata['name']}-{metadata['uid'][:8]}"

    def _check_exit(self, pod: JsonObject, record: PodProcess) -> None:
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            return
        code = record.process.poll()
        if code is None:
            return
        if record.eviction_message is not None:
            message = record.eviction_message
            self._update_status(pod, lambda p: _mark_evicted(p, message, (code, record)))
        else:
            self._update_status(pod, lambda p: _mark_terminated(p, code, record))

    def _terminate(self, pod: JsonObject, record: PodProcess | None) -> None:
        """A deleted pod: signal its process once, and remove the object when the process is gone."""
        metadata = pod["metadata"]
        if record is not None and record.process.poll() is None:
            if record.kill_at is None:
                self._signal(record, signal.SIGTERM, float(metadata.get("deletionGracePeriodSeconds", 30)))
            return
        if record is not None and pod["status"].get("phase") not in ("Succeeded", "Failed"):
            code = record.process.poll()
            assert code is not None
            self._update_status(pod, lambda p: _mark_terminated(p, code, record))
        self.processes.pop(metadata["uid"], None)
        self.store.remove("pods", metadata["namespace"], metadata["name"])

    def _signal(self, record: PodProcess, first: signal.Signals, grace: float) -> None:
        grace = min(max(grace, 0.0), MAX_GRACE_SECONDS)
        record.kill_at = time.monotonic() + grace
        _kill_group(record.process, signal.SIGKILL if grace == 0 else first)

    def _enforce_kill_deadlines(self) -> None:
        now = time.monotonic()
        for record in self.processes.values():
            if record.kill_at is not None and now >= record.kill_at and record.process.poll() is None:
                _kill_group(record.process, signal.SIGKILL)

    def _update_status(self, pod: JsonObject, change: Callable[[JsonObject], None]) -> None:
        metadata = pod["metadata"]
        self.store.update("pods", metadata["namespace"], metadata["name"], change)


def _grace_seconds(pod: JsonObject) -> float:
    return float(pod["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))


def _kill_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def _container_status(pod: JsonObject, state: JsonObject, ready: bool, container_id: str = "") -> JsonObject:
    container = pod["spec"]["containers"][0]
    status: JsonObject = {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "started": "running" in state,
        "state": state,
    }
    if container_id:
        status["containerID"] = container_id
    return status


def _conditions(scheduled_at: str, ready: bool, reason: str = "") -> list[JsonObject]:
    readiness = {"status": "True" if ready else "False", "lastTransitionTime": now_timestamp()}
    if reason:
        readiness["reason"] = reason
    return [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled_at},
        {"type": "Initialized", "status": "True", "lastTransitionTime": scheduled_at},
        {"type": "ContainersReady", **readiness},
        {"type": "Ready", **readiness},
    ]


def _scheduled_at(pod: JsonObject) -> str:
    for condition in pod["status"].get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            return str(condition.get("lastTransitionTime") or now_timestamp())
    return now_timestamp()


def _mark_running(pod: JsonObject, record: PodProcess) -> None:
    status = pod["status"]
    status.update({"phase": "Running", "hostIP": "127.0.0.1", "podIP": "127.0.0.1", "startTime": record.started_at})
    status["podIPs"] = [{"ip": "127.0.0.1"}]
    status["hostIPs"] = [{"ip": "127.0.0.1"}]
    status["conditions"] = _conditions(_scheduled_at(pod), True)
    state = {"running": {"startedAt": record.started_at}}
    status["containerStatuses"] = [_container_status(pod, state, True, f"double://{record.process.pid}")]


def _mark_waiting(pod: JsonObject, reason: str, message: str) -> None:
    state = {"waiting": {"reason": reason, "message": message}}
    pod["status"]["containerStatuses"] = [_container_status(pod, state, False)]
    pod["status"]["conditions"] = _conditions(_scheduled_at(pod), False, "ContainersNotReady")
    for condition in pod["status"]["conditions"]:
        condition.pop("lastTransitionTime", None)  # unchanged on every retry, so no event per retry


def _mark_start_failed(pod: JsonObject, message: str) -> None:
    terminated = {"exitCode": 128, "reason": "StartError", "message": message, "finishedAt": now_timestamp()}
    pod["status"].update({"phase": "Failed", "hostIP": "127.0.0.1", "startTime": now_timestamp()})
    pod["status"]["containerStatuses"] = [_container_status(pod, {"terminated": terminated}, False)]
    pod["status"]["conditions"] = _conditions(_scheduled_at(pod), False, "PodFailed")


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N: 128 + N, as a runtime says


def _mark_terminated(pod: JsonObject, returncode: int, record: PodProcess) -> None:
    code = _exit_code(returncode)
    terminated = {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "startedAt": record.started_at,
        "finishedAt": now_timestamp(),
        "containerID": f"double://{record.process.pid}",
    }
    pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
    pod["status"]["containerStatuses"] = [_container_status(pod, {"terminated": terminated}, False)]
    pod["status"]["conditions"] = _conditions(_scheduled_at(pod), False, "PodCompleted" if code == 0 else "PodFailed")


def _mark_evicted(pod: JsonObject, message: str, ended: tuple[int, PodProcess] | None) -> None:
    if ended is not None:
        _mark_terminated(pod, ended[0], ended[1])
    pod["status"].update({"phase": "Failed", "reason": "Evicted", "message": message})
    disruption = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message}
    pod["status"].setdefault("conditions", []).append({**disruption, "lastTransitionTime": now_timestamp()})
