"""The first program of every trial process: source startup-hook.sh, then run the entrypoint as Determined does.

Run by the agent as `python -m stalwart.harness.launch` in the trial's working directory. It stays as the run's
supervisor: a child subreaper (process_tree.py) with the entrypoint as its child, passing signals on. Whatever the
entrypoint started and left behind, in the process group or out of it (`setsid`), is killed when the entrypoint
ends, and the run ends with the entrypoint's status (a death by signal as that same signal).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import sys
from types import FrameType

from stalwart.harness.compat import COMPAT_PATH
from stalwart.harness.fence import watch_agent
from stalwart.harness.info import get_cluster_info
from stalwart.process_tree import become_subreaper, kill_tree, reap_children

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
"""The signals the supervisor passes on to the entrypoint (SIGKILL and SIGSTOP cannot be caught)."""
LEFTOVER_REAP_S = 10.0
"""How long the supervisor waits for the processes it killed after the entrypoint ended."""
TRIAL_CLASS = re.compile(r"^[\w.]+:[\w.]+$")

# The config's `entrypoint`: a shell command, or argv (a list, each item made a string).
Entrypoint = str | list[object]


def command_for(entrypoint: Entrypoint, startup_hook: bool) -> list[str]:
    """argv that runs the entrypoint: a list as argv, a string under `sh -c`, the hook sourced first.

    A Trial class (`model_def:MyTrial`) runs the PyTorchTrial harness through Determined's launcher.
    """
    if isinstance(entrypoint, str) and TRIAL_CLASS.match(entrypoint.strip()):
        entrypoint = ["python3", "-m", "determined.launch.torch_distributed", "--trial", entrypoint.strip()]
    if isinstance(entrypoint, list):
        argv = [str(a) for a in entrypoint]
        if not startup_hook:
            return argv
        return ["sh", "-c", '. ./startup-hook.sh && exec "$@"', "sh", *argv]
    script = str(entrypoint)
    if startup_hook:
        script = f". ./startup-hook.sh && {script}"
    return ["sh", "-c", script]


def _local_entrypoint(config_path: str) -> Entrypoint | None:
    """`--local CONFIG`: run the entrypoint here, with no master (the test mode's local run)."""
    import yaml

    os.environ["STALWART_LOCAL_CONFIG"] = os.path.abspath(config_path)
    os.environ.pop("STALWART_INFO_FILE", None)
    with open(config_path) as f:
        entrypoint: Entrypoint | None = (yaml.safe_load(f) or {}).get("entrypoint")
    return entrypoint


def _task_entrypoint() -> Entrypoint | None:
    """A command's entrypoint, from the info file the agent wrote."""
    import json

    with open(os.environ["STALWART_INFO_FILE"]) as f:
        entrypoint: Entrypoint | None = json.load(f).get("entrypoint")
    return entrypoint


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    watch_agent()  # first: from here on, nothing of this trial outlives its agent
    if argv[:1] == ["--local"] and len(argv) == 2:
        entrypoint: Entrypoint | None = _local_entrypoint(argv[1])
    else:
        info = get_cluster_info()
        if info is None or (info.trial is None and info.task_type == "TRIAL"):
            print("stalwart.harness.launch runs inside a trial started by a Stalwart agent, "
                  "or with --local CONFIG", file=sys.stderr)
            return 2
        entrypoint = info.trial._config.get("entrypoint") if info.trial else _task_entrypoint()
    if not entrypoint:
        print("the experiment config has no entrypoint", file=sys.stderr)
        return 2
    # `python3` in the entrypoint must be this environment's interpreter, and `import determined`
    # must find Stalwart's implementation first, whatever else is installed.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(COMPAT_PATH), os.environ.get("PYTHONPATH", "")) if p)
    argv = command_for(entrypoint, pathlib.Path("startup-hook.sh").is_file())
    sys.stdout.flush()
    sys.stderr.flush()
    return supervise(argv, f"cannot run entrypoint {entrypoint!r}")


def _start(argv: list[str], failure: str) -> int:
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as err:
            print(f"{failure}: {err}", file=sys.stderr, flush=True)
        os._exit(127)
    return child


def supervise(argv: list[str], failure: str) -> int:
    """Run `argv` as this process's child and end as it ends, leaving none of its descendants behind; `failure`
    begins the message when it cannot be run (status 127)."""
    become_subreaper()
    child = _start(argv, failure)

    def pass_on(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for sig in FORWARDED:
        signal.signal(sig, pass_on)
    while True:  # reaps the orphans it adopts as they end, too
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    kill_tree(os.getpid(), include_root=False)
    reap_children(LEFTOVER_REAP_S)
    if os.WIFSIGNALED(status):  # die the same death, so the agent sees the signal as before
        died_of = os.WTERMSIG(status)
        signal.signal(died_of, signal.SIG_DFL)
        os.kill(os.getpid(), died_of)
        return 128 + died_of
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
