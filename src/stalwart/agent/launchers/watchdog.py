"""The container fence: a host process that kills and removes one container the moment its agent dies.

`python -m stalwart.agent.launchers.watchdog ENGINE_URL API_VERSION CONTAINER_ID`, started by the container launcher
with its stdin on the read end of a pipe whose only write end the agent holds. When that pipe reaches
end-of-file (the kernel closes the agent's end when the agent exits, however it exits: kill -9 included) the
watchdog kills and removes the container. It runs in its own session, so signals sent to the agent's process
group (Ctrl-C in a terminal) do not reach it. When the run ends normally the agent removes the container
first and then closes the pipe: the watchdog finds nothing left and exits.
"""

from __future__ import annotations

import os
import signal
import sys
import time

REMOVE_TRIES = 5  # the engine may be busy; each try waits a little longer


def watch(engine_url: str, api_version: str, container_id: str) -> int:
    import docker  # before the wait: once the agent is gone, the removal goes out at once
    from docker.errors import APIError, NotFound

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    client = docker.APIClient(base_url=engine_url, version=api_version, timeout=30)  # no call yet
    while True:
        try:
            if not os.read(0, 64):
                break
        except InterruptedError:
            continue
    for attempt in range(REMOVE_TRIES):
        try:
            client.remove_container(container_id, force=True)
        except NotFound:
            return 0  # the agent removed it at the run's end, or someone else did
        except APIError as err:
            print(f"stalwart watchdog: removing container {container_id}: {err}", file=sys.stderr)
            time.sleep(0.2 * (attempt + 1))
            continue
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(watch(sys.argv[1], sys.argv[2], sys.argv[3]))
