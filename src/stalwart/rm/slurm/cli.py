"""Slurm's command-line tools as calls: `sbatch`, `squeue`, `scontrol`, `scancel`, one subprocess per call.

Every call runs with `os.environ` plus the client's `env` (where `SLURM_CONF` names the cluster's slurm.conf) and
a timeout; a failure (a non-zero exit, a missing tool, a timeout) is a `SlurmError` naming the command, its exit
status, the last lines of its stderr and what to check. The parsing is in pure functions (`parse_squeue`,
`parse_nodes`, `parse_key_values`, `expand_nodelist`) so it is tested without a Slurm.

The job's environment reaches it through sbatch's own environment (sbatch exports it to the job by default), never
through the command line: a token passed there would show in `ps` and in Slurm's logs."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

HINT = "is Slurm installed and SLURM_CONF (or /etc/slurm/slurm.conf) pointing at a running slurmctld?"
SEP = "\x1f"  # ASCII unit separator: in no job, user, partition or node name
SQUEUE_FIELDS = ("%i", "%j", "%T", "%r", "%N", "%u", "%P")
NOT_ACCEPTING = ("down", "drain", "fail", "maint", "future")  # state words (or their starts) that refuse jobs
GONE_JOB = ("Invalid job id", "already completing or completed", "Job has already finished")


class SlurmError(Exception):
    """A Slurm command failed, could not run or did not answer in time."""


@dataclass(frozen=True)
class SlurmJob:
    """One job as Slurm reports it. `state` is squeue's %T (PENDING, RUNNING, COMPLETING, COMPLETED, CANCELLED,
    FAILED, ...); `reason` is None when Slurm says "None"; `nodes` is the expanded node list (empty while pending)."""

    job_id: str
    name: str
    state: str
    reason: str | None
    nodes: tuple[str, ...]
    user: str
    partition: str


@dataclass(frozen=True)
class SlurmNode:
    """One node: its CPUs and GPUs (configured and allocated) and its state, lower-case like sinfo's (idle, mixed,
    allocated, down*, drained, draining, ...; a trailing `*`: not responding)."""

    name: str
    address: str
    partitions: tuple[str, ...]
    cpus: int
    cpus_alloc: int
    gpus: int
    gpus_alloc: int
    state: str

    @property
    def accepting(self) -> bool:
        """Whether Slurm may start jobs on it: not down, draining/drained, failing, in maintenance or silent."""
        if self.state.endswith("*"):
            return False
        return not any(word.startswith(NOT_ACCEPTING) for word in self.state.split("+"))


# -- parsing (pure) ------------------------------------------------------------------------------------------------


def expand_nodelist(nodelist: str) -> tuple[str, ...]:
    """`ca[1-2],b1,n[01-03,7]` -> ca1, ca2, b1, n01, n02, n03, n7 (zero padding kept; several bracket groups in one
    name multiply out). An empty list or "(null)" is no node."""
    text = nodelist.strip()
    if not text or text in ("(null)", "None"):
        return ()
    names: list[str] = []
    for part in _split_top(text):
        names.extend(_expand_one(part))
    return tuple(names)


def _split_top(text: str) -> list[str]:
    """Split on the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part for part in parts if part]


def _expand_one(name: str) -> list[str]:
    match = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", name)
    if match is None:
        return [name]
    head, ranges, tail = match.groups()
    tails = _expand_one(tail) if tail else [""]
    out: list[str] = []
    for item in ranges.split(","):
        low, _, high = item.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(f"not a Slurm node range: [{ranges}] in {name!r}")
        width = len(low) if low.startswith("0") else 0
        for number in range(int(low), int(high or low) + 1):
            out.extend(f"{head}{number:0{width}d}{rest}" for rest in tails)
    return out


def squeue_format() -> str:
    """The `squeue -o` format `parse_squeue` reads: job id, name, state, reason, nodes, user, partition."""
    return SEP.join(SQUEUE_FIELDS)


def parse_squeue(output: str) -> list[SlurmJob]:
    """`squeue -h -o <squeue_format()>`'s lines as jobs (a line with too few fields is a SlurmError)."""
    jobs = []
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = line.split(SEP)
        if len(fields) != len(SQUEUE_FIELDS):
            raise SlurmError(f"squeue printed a line of {len(fields)} fields, expected {len(SQUEUE_FIELDS)}: "
                             f"{line!r}")
        job_id, name, state, reason, nodes, user, partition = (field.strip() for field in fields)
        jobs.append(SlurmJob(job_id, name, state, _reason(reason), expand_nodelist(nodes), user, partition))
    return jobs


def _reason(text: str) -> str | None:
    return None if text in ("", "None", "(null)") else text


def parse_key_values(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` line as its Key=value pairs (a value runs up to the next ` Key=`, so values with
    spaces, like OS= or Reason=, survive)."""
    keys = list(re.finditer(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/]*)=", line))
    return {key.group(1): line[key.end():following.start() if following else len(line)].strip()
            for key, following in zip(keys, [*keys[1:], None], strict=True)}


def parse_job(line: str) -> SlurmJob:
    """One `scontrol show job -o` line as a job."""
    fields = parse_key_values(line)
    user = fields.get("UserId", "").split("(")[0]
    return SlurmJob(fields.get("JobId", ""), fields.get("JobName", ""), fields.get("JobState", "").split()[0],
                    _reason(fields.get("Reason", "")), expand_nodelist(fields.get("NodeList", "")), user,
                    fields.get("Partition", ""))


def parse_nodes(output: str) -> list[SlurmNode]:
    """`scontrol show node -o`'s lines as nodes."""
    nodes = []
    for line in output.splitlines():
        if not line.strip().startswith("NodeName="):
            continue
        fields = parse_key_values(line)
        partitions = tuple(p for p in fields.get("Partitions", "").split(",") if p)
        gpus = _tres_gpus(fields.get("CfgTRES", "")) or _gres_gpus(fields.get("Gres", ""))
        nodes.append(SlurmNode(fields["NodeName"], fields.get("NodeAddr", fields["NodeName"]), partitions,
                               _int(fields.get("CPUTot")), _int(fields.get("CPUAlloc")), gpus,
                               _tres_gpus(fields.get("AllocTRES", "")), node_state(fields.get("State", "unknown"))))
    return nodes


def _int(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


def _tres_gpus(tres: str) -> int:
    """GPUs in a TRES list: `gres/gpu=N`, else the sum of the typed `gres/gpu:TYPE=N`."""
    counts = dict(item.partition("=")[::2] for item in tres.split(",") if "=" in item)
    if "gres/gpu" in counts:
        return _int(counts["gres/gpu"])
    return sum(_int(count) for key, count in counts.items() if key.startswith("gres/gpu:"))


def _gres_gpus(gres: str) -> int:
    """GPUs in a Gres string: `gpu:2`, `gpu:a100:2(S:0-1)`, `gpu:2,shard:8`."""
    return sum(int(m.group(1)) for m in re.finditer(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)", gres))


def node_state(raw: str) -> str:
    """scontrol's `IDLE+DRAIN` or `DOWN+NOT_RESPONDING` in sinfo's words: drained, down*, ..."""
    base, *flags = raw.lower().split("+")
    if "drain" in flags:
        base = "drained" if base in ("idle", "down") else "draining"
    for flag in ("maint", "fail", "reboot_requested", "powered_down", "power_down", "powering_up"):
        if flag in flags:
            base = f"{base}+{flag}"
    return base + ("*" if "not_responding" in flags else "")


# -- the calls -----------------------------------------------------------------------------------------------------


class SlurmCli:
    """Slurm's client tools against one cluster (`env`: what the tools need on top of os.environ, SLURM_CONF)."""

    def __init__(self, env: Mapping[str, str] | None = None, timeout_s: float = 30.0) -> None:
        self.env = dict(env or {})
        self.timeout_s = timeout_s

    def _run(self, argv: Sequence[str], stdin: str | None = None,
             job_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environ = {**os.environ, **self.env, **(job_env or {})}
        command = " ".join(argv)
        try:
            done = subprocess.run(list(argv), input=stdin, env=environ, capture_output=True, text=True,
                                  timeout=self.timeout_s, stdin=None if stdin is not None else subprocess.DEVNULL)
        except FileNotFoundError as err:
            raise SlurmError(f"`{command}` could not run: {argv[0]} is not on PATH ({err.strerror}); {HINT} "
                             "(Debian: apt-get install slurm-client)") from err
        except subprocess.TimeoutExpired as err:
            raise SlurmError(f"`{command}` did not finish within {self.timeout_s:g} s; {HINT}") from err
        if done.returncode != 0:
            raise SlurmError(_failure(command, done.returncode, done.stderr))
        return done

    def submit(self, args: Sequence[str], script: str, env: Mapping[str, str] | None = None,
               as_uid: str | None = None) -> str:
        """`sbatch --parsable [--uid=as_uid --gid=its group] *args` with `script` on stdin; `env` reaches the job
        through sbatch's environment. The job's id.

        `as_uid` (root only) runs the job as that user, with the primary group this host knows for it (sbatch alone
        would keep root's group); its output path and working directory must be writable by that user."""
        argv = ["sbatch", "--parsable", *_as_user(as_uid), *args]
        out = self._run(argv, stdin=script, job_env=env).stdout.strip()
        job_id = out.splitlines()[-1].split(";")[0].strip() if out else ""
        if not job_id.isdigit() and not re.fullmatch(r"\d+_\d+|\d+\+\d+", job_id):
            raise SlurmError(f"`sbatch` printed no job id: {out[-500:]!r}; {HINT}")
        return job_id

    def jobs(self, name_prefix: str, partitions: Sequence[str] = ()) -> list[SlurmJob]:
        """The live jobs (pending, running, completing, ...) of every user whose name starts with `name_prefix`, in
        `partitions` (all: empty): squeue lists them, this filters by name."""
        where = [f"--partition={','.join(partitions)}"] if partitions else []
        out = self._run(["squeue", "-h", "-a", *where, "-o", squeue_format()]).stdout
        return [job for job in parse_squeue(out) if job.name.startswith(name_prefix)]

    def job(self, job_id: str) -> SlurmJob | None:
        """One job, ended ones included while Slurm still knows them (MinJobAge); None once it does not."""
        try:
            out = self._run(["scontrol", "show", "job", "-o", job_id]).stdout
        except SlurmError as err:
            if "Invalid job id" in str(err):
                return None
            raise
        lines = [line for line in out.splitlines() if line.startswith("JobId=")]
        return parse_job(lines[0]) if lines else None

    def cancel(self, job_ids: Sequence[str]) -> None:
        """Cancel jobs (one scancel); a job already gone is no error."""
        if not job_ids:
            return
        try:
            self._run(["scancel", *job_ids])
        except SlurmError as err:
            lines = [line for line in str(err).split("\n")[1:] if "error" in line.lower()]
            if not lines or not all(any(gone in line for gone in GONE_JOB) for line in lines):
                raise

    def nodes(self) -> list[SlurmNode]:
        """Every node with its CPUs, GPUs and state."""
        return parse_nodes(self._run(["scontrol", "show", "node", "-o"]).stdout)

    def partitions(self) -> list[str]:
        """The partition names, the default one first."""
        out = self._run(["scontrol", "show", "partition", "-o"]).stdout
        parts = [parse_key_values(line) for line in out.splitlines() if line.startswith("PartitionName=")]
        return [p["PartitionName"] for p in sorted(parts, key=lambda p: p.get("Default") != "YES")]


def _as_user(uid: str | None) -> list[str]:
    """sbatch's --uid and, where this host knows the user, --gid of the user's primary group."""
    if not uid:
        return []
    try:
        entry = pwd.getpwuid(int(uid)) if uid.isdigit() else pwd.getpwnam(uid)
    except KeyError:
        return [f"--uid={uid}"]  # sbatch names the unknown user itself
    return [f"--uid={uid}", f"--gid={entry.pw_gid}"]


def _failure(command: str, status: int, stderr: str) -> str:
    """A failed command's message: what ran, its status, stderr's last lines, what to check."""
    tail = [line for line in stderr.strip().splitlines() if line.strip()][-5:]
    shown = "\n".join(f"  {line}" for line in tail) or "  (no stderr)"
    return f"`{command}` exited with status {status}:\n{shown}\n{HINT}"
