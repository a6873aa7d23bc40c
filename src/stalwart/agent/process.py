"""One trial's run on this agent: prepare its working directory, describe its run to the agent's launcher
(`agent/launchers/`), stream its output, kill it."""

from __future__ import annotations

import base64
import json
import os
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from stalwart.agent import container_order, os_users, task_env
from stalwart.agent.launchers import (
    Harness,
    ImageError,
    Launched,
    Launcher,
    LaunchSpec,
    Mount,
    ProcessLauncher,
    RunAs,
)
from stalwart.agent.log_buffer import Meta
from stalwart.config.agent import DEFAULT_TASK_ENV_PASSTHROUGH
from stalwart.context import safe_extract

HARNESS_MODULE = ("-m", "stalwart.harness.launch")  # every run's entrypoint: the harness's launcher
MAX_LINE_BYTES = 1024 * 1024  # a longer line (no newline yet) is stored in pieces of this size


# Takes a run of (timestamp, text) lines of one stream (blocking while the log buffer is full).
OnLines = Callable[[Meta, list[tuple[float, str]]], object]


class TrialProcess:
    """One allocation's run on this agent (`order`: the master's StartOrder, as a dict), started by `launcher`
    (by default the process launcher on `root`)."""

    def __init__(self, order: dict[str, Any], root: pathlib.Path, agent_id: str, on_line: OnLines,
                 on_exit: Callable[[TrialProcess], object], threads: int | None = None,
                 passthrough: Sequence[str] = DEFAULT_TASK_ENV_PASSTHROUGH, launcher: Launcher | None = None,
                 slot_type: str = "cpu") -> None:
        self.order = order
        self.threads = threads  # OMP_NUM_THREADS for each process of this run, unless the agent or config sets it
        self.passthrough = passthrough  # the agent config's task_env_passthrough: what it gets of the agent's env
        self.allocation_id = order["allocation_id"]
        self.dir = root / self.allocation_id
        self.workdir = self.dir / "workdir"
        self.run_dir = self.dir / "run"
        self.run_as: dict[str, Any] | None = order.get("run_as")  # the OS user it runs as; None: the agent's
        self.agent_id = agent_id
        self._on_line = on_line
        self._on_exit = on_exit
        self.launcher = launcher if launcher is not None else ProcessLauncher(root, agent_id)
        self.run: Launched | None = None
        self.exit_code: int | None = None
        self.killed = False
        self.fenced = False  # killed by the agent itself for lack of the master: its end is a lost agent's
        self.setup_failed = False  # its image could not be had or cannot run the harness: not the user's code
        self.slot_type = slot_type  # the agent's: a cuda agent's slots are GPUs a container gets
        self._lock = threading.Lock()

    def prepare(self, archive_b64: str) -> None:
        """Unpack the context and write the info file; with an OS user to run as, hand both directories to it
        (os_users.CannotRunAs when this agent cannot: not root, or the work root out of that user's reach)."""
        if self.run_as is not None:
            # in a container the directories are mounted at their paths, below parents the engine makes passable
            os_users.check(self.run_as, self.dir.parent, reach=not self.launcher.runs_images)
            self.dir.mkdir(parents=True, exist_ok=True)
            os.chmod(self.dir, os_users.PASS_THROUGH)  # the agent's process record stays in here, root's
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        safe_extract(base64.b64decode(archive_b64), self.workdir, max_size=None)  # the master checked its size
        info_file = self.run_dir / "info.json"
        info_file.write_text(json.dumps(self.order["info"], indent=2))
        os.chmod(info_file, os_users.PRIVATE_FILE)
        if self.run_as is not None:
            os_users.hand_over(self.workdir, self.run_as)
            os_users.hand_over(self.run_dir, self.run_as)

    def spec(self, harness: Harness | None = None) -> LaunchSpec:
        """The run this allocation asks for: the harness's launcher in the work directory, with its environment
        (`harness`: how to start it; by default with this agent's own Python)."""
        harness = harness if harness is not None else Harness((sys.executable,))
        # a clean environment (agent/task_env.py): nothing of the agent's own but a minimal base and what the
        # agent config passes on; then what the master set for the task and what its config asks
        env = task_env.inherited(os.environ, self.passthrough)
        env.update(self.order["env"])
        env["STALWART_INFO_FILE"] = str(self.run_dir / "info.json")
        env["DET_RUN_DIR"] = str(self.run_dir)
        env["DET_WORKDIR"] = str(self.workdir)
        env["PYTHONUNBUFFERED"] = "1"
        env.update(os_users.user_env(self.run_as))
        if self.threads is not None:
            env.setdefault("OMP_NUM_THREADS", str(self.threads))
        for key, value in harness.env.items():  # the harness's own packages first on PYTHONPATH
            env = container_order.with_path_first(env, key, value)
        user = RunAs(self.run_as["uid"], self.run_as["gid"]) if self.run_as is not None else None
        mounts = tuple(Mount(str(d), str(d), read_only=False) for d in (self.workdir, self.run_dir))
        return LaunchSpec(self.allocation_id, harness.python + HARNESS_MODULE, str(self.workdir), env, user=user,
                          mounts=mounts + harness.mounts, fence=True)

    def container_spec(self) -> LaunchSpec:
        """The run in the order's image: the image made present first (a pull's progress goes to the task's log),
        then the harness mounted in for the image's Python; ImageError when either cannot be."""
        run = container_order.container_run(self.order, list(self.order.get("slot_ids") or []), self.slot_type)
        self.launcher.prepare_image(run.source, self._agent_line)
        base = self.spec(self.launcher.harness(run.source.image))
        for mount in run.mounts:
            self._ensure_host_dir(pathlib.Path(mount.host_path))
        return replace(base, image=run.source.image, mounts=base.mounts + run.mounts, shm_size=run.shm_size,
                       container=run.options)

    def launch_spec(self) -> LaunchSpec:
        """The run as this agent's launcher runs it: in the order's image on a container runtime (ImageError when
        the order names none), else as a process (an image the order names is then not used: said in its log)."""
        image = container_order.image_of(self.order)
        if self.launcher.runs_images:
            if image is None:
                raise ImageError(f"no image for this task: agent {self.agent_id} runs tasks in {self.launcher.name} "
                                 "containers; set environment.image in the task's config, or task_container_defaults"
                                 ".image in the master's config")
            return self.container_spec()
        if image is not None:
            self._agent_line(f"agent {self.agent_id} runs tasks as local processes (runtime process): the image "
                             f"{image} is not used; run agents with --runtime docker or podman to run it", "WARNING")
        return self.spec()

    def _ensure_host_dir(self, path: pathlib.Path) -> None:
        """A bind mount's host directory that does not exist yet is made (the checkpoint storage's, typically),
        and given to the task's OS user (the engine would otherwise make it, root's)."""
        if path.exists():
            return
        path.mkdir(parents=True, exist_ok=True)
        if self.run_as is not None:
            os_users.hand_over(path, self.run_as)

    def _agent_line(self, text: str, level: str = "INFO") -> None:
        """A line of the agent's own in the task's log (an image's pull progress, a warning)."""
        meta: Meta = {"allocation_id": self.allocation_id, "trial_id": self.order.get("trial_id"),
                      "agent_id": self.agent_id, "rank_id": None, "stdtype": "stdout", "source": "agent",
                      "level": level}
        self._on_line(meta, [(time.time(), text)])

    def start(self) -> int | None:
        """Start the run; its entrypoint's pid, or None if a kill arrived first (the exit is reported then)."""
        try:
            spec = self.launch_spec()
        except ImageError:
            self.setup_failed = True
            raise
        with self._lock:
            if self.killed:
                self.exit_code = -9
                self._on_exit(self)
                return None
            self.run = run = self.launcher.start(spec)  # recorded: a restarted agent kills it if it still runs
        readers = [
            threading.Thread(target=self._pump, args=(run.output("stdout"), "stdout"), daemon=True),
            threading.Thread(target=self._pump, args=(run.output("stderr"), "stderr"), daemon=True),
        ]
        for r in readers:
            r.start()
        threading.Thread(target=self._wait, args=(run, readers), daemon=True).start()
        return run.pid

    def _pump(self, chunks: Iterable[bytes], stdtype: str) -> None:
        """Take the stream's chunks as they arrive and hand its whole lines, in order, to
        `on_line(meta, [(timestamp, text), ...])` (one call per run of lines of one rank). That call blocks
        while the agent's log buffer for this allocation is full: the trial's writes then block too
        (back-pressure), rather than lines being lost."""
        metas: dict[int | None, dict[str, Any]] = {}

        def meta(rank: int | None) -> dict[str, Any]:
            if rank not in metas:
                metas[rank] = {"allocation_id": self.allocation_id, "trial_id": self.order.get("trial_id"),
                               "agent_id": self.agent_id, "rank_id": rank, "stdtype": stdtype, "source": "task",
                               "level": None}
            return metas[rank]

        def emit(text: str) -> None:
            now = time.time()
            current: int | None = None
            run: list[tuple[float, str]] = []
            for line in text.split("\n"):
                rank = None
                if line.startswith("[rank=") and "]" in line:
                    head, _, rest = line.partition("]")
                    try:
                        rank = int(head[len("[rank="):])
                        line = rest.lstrip(" ")
                    except ValueError:
                        pass
                if rank != current and run:
                    self._on_line(meta(current), run)
                    run = []
                current = rank
                run.append((now, line))
            if run:
                self._on_line(meta(current), run)

        pending = bytearray()
        for chunk in chunks:
            pending += chunk
            end = pending.rfind(b"\n")
            if end < 0 and len(pending) < MAX_LINE_BYTES:
                continue
            if end < 0:  # one very long line: store it in pieces rather than hold it all
                end = len(pending)
            emit(pending[:end].decode("utf-8", errors="replace"))
            del pending[:end + 1]
        if pending:
            emit(pending.decode("utf-8", errors="replace"))

    def _wait(self, run: Launched, readers: Sequence[threading.Thread]) -> None:
        self.exit_code = run.wait()  # nothing of the run is left then, and its fence and record are gone
        for r in readers:
            r.join(timeout=10)
        self._on_exit(self)

    def kill(self) -> None:
        with self._lock:
            self.killed = True
            if self.run is not None:
                self.run.kill()
