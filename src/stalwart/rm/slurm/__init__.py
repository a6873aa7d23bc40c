"""Slurm as an engine: its command-line tools (`cli`), driven by a subprocess each and parsed into frozen values.

Nothing here keeps state or touches the database: the Slurm resource manager (master/scheduling/slurm_manager.py)
builds on `SlurmCli`."""

from stalwart.rm.slurm.cli import (
    SlurmCli,
    SlurmError,
    SlurmJob,
    SlurmNode,
    expand_nodelist,
    parse_key_values,
    parse_nodes,
    parse_squeue,
)

__all__ = ["SlurmCli", "SlurmError", "SlurmJob", "SlurmNode", "expand_nodelist", "parse_key_values", "parse_nodes",
           "parse_squeue"]
