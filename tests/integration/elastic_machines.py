"""What the elastic tests (tests/integration/test_elastic_aws.py, test_elastic_gcp.py) share: the machines of their
instances (each instance's startup script run as a local process, a real `stalwart agent run`, halted when its
instance ends, or killed outright with its runs' processes when the cloud takes the instance back), the searches they
submit and the master's view of a pool's instances."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import threading
from typing import Any

import yaml

from integration.helpers import digits_config
from stalwart.testing import LocalTestCluster


def processes_of(allocation_id: str) -> list[int]:
    """Every process that runs inside the allocation (its environment names it)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = pathlib.Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if f"STALWART_ALLOCATION_ID={allocation_id}".encode() in environ:
            found.append(int(entry))
    return found


class Machines:
    """One local process per booted instance, its output in `root/<instance>.log`."""

    def __init__(self, root: pathlib.Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def boot(self, instance_id: str, startup_script: str) -> None:
        if instance_id in self.running:
            return
        script = self.root / f"{instance_id}.sh"
        script.write_text(startup_script)
        with open(self.root / f"{instance_id}.log", "ab") as log:
            self.running[instance_id] = subprocess.Popen(
                ["sh", str(script)], env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)

    def halt(self, instance_id: str, how: signal.Signals = signal.SIGTERM) -> None:
        """The instance shuts down: its agent is stopped (SIGTERM: it kills its runs and exits)."""
        machine = self.running.get(instance_id)
        if machine is not None and machine.poll() is None:
            machine.send_signal(how)

    def vanish(self, instance_id: str, allocation_id: str) -> None:
        """The machine is gone at once: its agent and the run's processes are killed, nothing is reported."""
        self.halt(instance_id, signal.SIGKILL)
        for pid in processes_of(allocation_id):
            with contextlib.suppress(ProcessLookupError):  # its fence may have killed it since it was listed
                os.kill(pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for instance_id in self.running:
            self.halt(instance_id)
        for machine in self.running.values():
            try:
                machine.wait(15)
            except subprocess.TimeoutExpired:
                machine.kill()
                machine.wait()


def pool_instances(c: LocalTestCluster, pool: str) -> list[dict[str, Any]]:
    return c.client().get(f"/resource-pools/{pool}/instances")["instances"]


def search(pool: str, trials: int, batches: int, **hparams: Any) -> str:
    cfg = yaml.safe_load(digits_config(**{f"hyperparameters__{k}": v for k, v in hparams.items()}))
    cfg["searcher"] = {"name": "random", "metric": "validation_accuracy", "smaller_is_better": False,
                       "max_trials": trials, "max_length": {"batches": batches}}
    cfg["min_validation_period"] = {"batches": max(1, batches // 4)}
    cfg["resources"] = {"resource_pool": pool, "slots_per_trial": 1}
    return yaml.safe_dump(cfg)


class MachineWatcher(threading.Thread):
    """Polls a cloud (`poll`, each test's) every 0.3 s while the test runs, keeping `machines` in step with its
    instances and the most instances seen live per pool; `stop` ends the polling and halts every machine."""

    def __init__(self, name: str, machines: Machines) -> None:
        super().__init__(name=name, daemon=True)
        self.machines = machines
        self.most_live: dict[str, int] = {}
        self.stopping = threading.Event()

    def poll(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        while not self.stopping.wait(0.3):
            try:
                self.poll()
            except Exception as err:  # noqa: BLE001 - keep watching; the test's own waits say what went wrong
                print(f"{self.name}: {err!r}", file=sys.stderr)

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)
        self.machines.stop_all()
