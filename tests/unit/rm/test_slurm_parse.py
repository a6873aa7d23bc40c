"""The Slurm tools' output as values, without a Slurm: node lists, squeue lines, scontrol's Key=value lines."""

from __future__ import annotations

import pytest

from stalwart.rm.slurm import SlurmError, SlurmJob, SlurmNode, expand_nodelist, parse_key_values, parse_nodes
from stalwart.rm.slurm.cli import SEP, node_state, parse_job, parse_squeue, squeue_format


@pytest.mark.parametrize(("nodelist", "expected"), [
    ("", ()),
    ("(null)", ()),
    ("b1", ("b1",)),
    ("b1,cb1", ("b1", "cb1")),
    ("ca[1-2]", ("ca1", "ca2")),
    ("ca[1-3],b1", ("ca1", "ca2", "ca3", "b1")),
    ("n[01-03,7]", ("n01", "n02", "n03", "n7")),
    ("n[098-101]", ("n098", "n099", "n100", "n101")),
    ("r[1-2]n[1-2]", ("r1n1", "r1n2", "r2n1", "r2n2")),
    ("gpu-[1-2]-ib,x[5]", ("gpu-1-ib", "gpu-2-ib", "x5")),
])
def test_expand_nodelist(nodelist, expected):
    assert expand_nodelist(nodelist) == expected


def test_expand_nodelist_refuses_a_range_it_cannot_read():
    with pytest.raises(ValueError, match=r"not a Slurm node range: \[a-b\]"):
        expand_nodelist("n[a-b]")


def line(*fields: str) -> str:
    return SEP.join(fields)


def test_parse_squeue_reads_running_and_pending_jobs():
    assert squeue_format().count(SEP) == 6
    out = "\n".join([
        line("12", "stalwart-a1", "RUNNING", "None", "b[1-2]", "root", "batch"),
        line("13", "name with spaces|pipe", "PENDING", "Resources", "", "alice", "rmconf_a"),
        "",
    ])
    assert parse_squeue(out) == [
        SlurmJob("12", "stalwart-a1", "RUNNING", None, ("b1", "b2"), "root", "batch"),
        SlurmJob("13", "name with spaces|pipe", "PENDING", "Resources", (), "alice", "rmconf_a"),
    ]
    assert parse_squeue("") == []


def test_parse_squeue_refuses_a_short_line():
    with pytest.raises(SlurmError, match="squeue printed a line of 2 fields, expected 7"):
        parse_squeue(line("12", "x"))


JOB = ("JobId=41 JobName=stalwart-x UserId=nobody(65534) GroupId=nogroup(65534) MCS_label=N/A Priority=1 Nice=0 "
       "Account=(null) QOS=(null) JobState=CANCELLED Reason=None Dependency=(null) Requeue=1 Restarts=0 "
       "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:02 Partition=batch AllocNode:Sid=vm:123 "
       "NodeList=ca[1-2] BatchHost=ca1 NumNodes=2 NumCPUs=2 TRES=cpu=2,mem=2000M,node=2 "
       "Command=(null) WorkDir=/tmp/a dir StdOut=/tmp/a dir/out-41.txt Power=")


def test_parse_job_reads_scontrol_show_job():
    assert parse_job(JOB) == SlurmJob("41", "stalwart-x", "CANCELLED", None, ("ca1", "ca2"), "nobody", "batch")
    pending = JOB.replace("JobState=CANCELLED Reason=None", "JobState=PENDING Reason=Resources")
    assert parse_job(pending.replace("NodeList=ca[1-2]", "NodeList=(null)")).nodes == ()


def test_parse_key_values_keeps_values_with_spaces():
    fields = parse_key_values(JOB)
    assert fields["WorkDir"] == "/tmp/a dir"
    assert fields["StdOut"] == "/tmp/a dir/out-41.txt"
    assert fields["AllocNode:Sid"] == "vm:123"
    assert fields["TRES"] == "cpu=2,mem=2000M,node=2"
    assert fields["Power"] == ""


NODE = ("NodeName={name} Arch=x86_64 CoresPerSocket=1  CPUAlloc={alloc} CPUEfctv=4 CPUTot=4 CPULoad=0.38 "
        "AvailableFeatures=(null) ActiveFeatures=(null) Gres={gres} NodeAddr=10.0.0.{n} NodeHostName=vm Port=5 "
        "Version=22.05.8 OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 State={state} "
        "Partitions={partitions}  CfgTRES={cfg} AllocTRES={alloc_tres} Reason={reason}")


def node_line(n: int, **kw: str) -> str:
    values = {"name": f"g{n}", "alloc": "0", "gres": "(null)", "n": str(n), "state": "IDLE", "partitions": "batch",
              "cfg": "cpu=4,mem=1000M,billing=4", "alloc_tres": "", "reason": "(null)"} | kw
    return NODE.format(**values)


def test_parse_nodes_reads_cpus_gpus_and_partitions():
    out = "\n".join([
        node_line(1),
        node_line(2, alloc="3", gres="gpu:a100:4(S:0-1)", state="MIXED", partitions="batch,rmconf_b",
                  cfg="cpu=4,mem=1000M,billing=4,gres/gpu=4,gres/gpu:a100=4",
                  alloc_tres="cpu=3,gres/gpu=1,gres/gpu:a100=1"),
        node_line(3, gres="gpu:2,shard:8", state="DOWN+DRAIN+NOT_RESPONDING", reason="test [root@2026-11-26T17:20]"),
    ])
    one, two, three = parse_nodes(out)
    assert one == SlurmNode("g1", "10.0.0.1", ("batch",), 4, 0, 0, 0, "idle")
    assert two == SlurmNode("g2", "10.0.0.2", ("batch", "rmconf_b"), 4, 3, 4, 1, "mixed")
    assert (three.gpus, three.gpus_alloc, three.state) == (2, 0, "drained*")
    assert one.accepting and two.accepting and not three.accepting


def test_parse_nodes_typed_gpus_only_in_tres_are_summed():
    out = node_line(4, cfg="cpu=4,gres/gpu:a100=2,gres/gpu:v100=1", alloc_tres="gres/gpu:v100=1")
    assert (parse_nodes(out)[0].gpus, parse_nodes(out)[0].gpus_alloc) == (3, 1)


@pytest.mark.parametrize(("raw", "state", "accepting"), [
    ("IDLE", "idle", True),
    ("ALLOCATED", "allocated", True),
    ("MIXED+DRAIN", "draining", False),
    ("IDLE+DRAIN", "drained", False),
    ("DOWN", "down", False),
    ("DOWN+NOT_RESPONDING", "down*", False),
    ("IDLE+NOT_RESPONDING", "idle*", False),
    ("IDLE+MAINT", "idle+maint", False),
    ("FUTURE", "future", False),
    ("IDLE+POWERED_DOWN", "idle+powered_down", True),
])
def test_node_state_in_sinfo_words(raw, state, accepting):
    assert node_state(raw) == state
    node = SlurmNode("n", "n", (), 1, 0, 0, 0, node_state(raw))
    assert node.accepting is accepting
