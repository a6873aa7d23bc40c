"""A shell's task: an OpenSSH server for one key, reached by `ssh` through the master (`stalwart shell open`).

`python3 -m stalwart.harness.shell_task --public-key 'ssh-ed25519 ...' --key-id ID` (the entrypoint the master gives
a shell, master/tasks/shells.py). It writes a per-task sshd config in `$DET_RUN_DIR/shell/` (a host key made there,
the shell's public key as the only authorized key, no passwords, no PAM, the task's user alone), makes sure
`/run/sshd` (sshd's privilege separation directory) exists, and serves `/usr/sbin/sshd -D -e -f <config>` with the
service wrapper (harness/service.py): its port goes to the master once sshd listens, and the `sshd` busy probe
reports activity while a session is open, which keeps the shell's idle timeout from running out.

Sessions get the task's environment (`SetEnv`: the DET_* and STALWART_* variables, PATH, PYTHONPATH) and
`STALWART_WORKDIR`, the task's working directory; `stalwart shell open` starts its shell or command there (`cd
"$STALWART_WORKDIR"`), as sshd itself starts in the user's home.

sshd listens on 127.0.0.1 when the master is on this machine (its URL names a loopback host), else on every
address: the master's proxy reaches it at the agent's address. Only the shell's key is accepted.
"""

from __future__ import annotations

import argparse
import getpass
import os
import pathlib
import shutil
import subprocess
import sys

from stalwart.harness.info import ClusterInfo, get_cluster_info
from stalwart.harness.service import listen_address, serve
from stalwart.harness.session import trial_client

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = pathlib.Path("/run/sshd")
PASSED_ENV_PREFIXES = ("DET_", "STALWART_")
PASSED_ENV = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH")
NOT_PASSED = ("STALWART_SERVICE_TOKEN",)  # the proxy's credential to the service: no session needs it
WORKDIR_ENV = "STALWART_WORKDIR"


class ShellSetupError(Exception):
    """The machine cannot serve a shell (no sshd, no /run/sshd): the message says what to install or fix."""


def session_env(env: dict[str, str], workdir: str) -> dict[str, str]:
    """The variables a session gets (`SetEnv`): the task's own, and where its working directory is."""
    kept = {k: v for k, v in env.items()
            if (k.startswith(PASSED_ENV_PREFIXES) or k in PASSED_ENV) and k not in NOT_PASSED}
    kept[WORKDIR_ENV] = workdir
    return {k: v for k, v in kept.items() if '"' not in v and "\n" not in v and "\\" not in v}


def sshd_config(home: pathlib.Path, user: str, listen: str, env: dict[str, str]) -> str:
    """The text of the shell's sshd_config (its port is sshd's `-o Port=`, which the service wrapper picks)."""
    set_env = " ".join(f'"{k}={v}"' for k, v in sorted(env.items()))
    lines = [
        f"ListenAddress {listen}",
        f"HostKey {home / 'host_ed25519'}",
        f"PidFile {home / 'sshd.pid'}",
        f"AuthorizedKeysFile {home / 'authorized_keys'}",
        f"AllowUsers {user}",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password",
        "UsePAM no",
        "StrictModes no",
        "PrintMotd no",
        "Subsystem sftp internal-sftp",
    ]
    if set_env:
        lines.append(f"SetEnv {set_env}")
    return "\n".join(lines) + "\n"


def _require_sshd() -> str:
    keygen = shutil.which("ssh-keygen")
    if not os.access(SSHD, os.X_OK) or keygen is None:
        raise ShellSetupError(f"this machine has no OpenSSH server ({SSHD}, ssh-keygen): a shell needs it on the "
                              "agent (Debian/Ubuntu: apt-get install openssh-server; in an image: add it to the image)")
    try:
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as err:
        raise ShellSetupError(f"sshd needs its privilege separation directory {PRIVSEP_DIR}, which could not be "
                              f"made ({err.strerror}): create it once as root (mkdir -p {PRIVSEP_DIR})") from None
    return keygen


def prepare(home: pathlib.Path, public_key: str, info: ClusterInfo) -> pathlib.Path:
    """Write the host key, authorized_keys and sshd_config under `home`; the config's path."""
    keygen = _require_sshd()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    host_key = home / "host_ed25519"
    if not host_key.exists():
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
    authorized = home / "authorized_keys"
    authorized.write_text(public_key.strip() + "\n")
    authorized.chmod(0o600)
    config = home / "sshd_config"
    text = sshd_config(home, getpass.getuser(), listen_address(info.master_url),
                       session_env(dict(os.environ), os.getcwd()))
    config.write_text(text)
    return config


def _ready_now(info: ClusterInfo) -> None:
    """Tell the master the shell is in use as it starts serving: its idle clock counts from here, not from the
    start of its allocation (a busy machine may take seconds to get this far, and no one could open it before)."""
    try:
        trial_client(info).allocation_activity(info.allocation_id)
    except Exception as err:  # the master away for a moment: the clock then counts from the allocation's start
        print(f"could not tell the master the shell is starting to serve: {err}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stalwart.harness.shell_task", description=__doc__.splitlines()[0])
    parser.add_argument("--public-key", required=True, help="the only key sessions may log in with")
    parser.add_argument("--key-id", default="", help="which key the master made (it derives the private half)")
    args = parser.parse_args(argv)
    info = get_cluster_info()
    if info is None:
        print("stalwart.harness.shell_task runs inside a shell started by a Stalwart agent", file=sys.stderr)
        return 2
    run_dir = pathlib.Path(os.environ.get("DET_RUN_DIR") or os.getcwd())
    try:
        config = prepare(run_dir / "shell", args.public_key, info)
    except (ShellSetupError, subprocess.CalledProcessError, OSError) as err:
        print(f"the shell cannot start: {err}", file=sys.stderr, flush=True)
        return 1
    _ready_now(info)
    return serve([SSHD, "-D", "-e", "-f", str(config), "-o", "Port={port}"], info, busy="sshd")


if __name__ == "__main__":
    sys.exit(main())
