"""`determined.layers`: the workload stream that drives a legacy TrialController (Determined 0.37/0.38)."""

from ._workload_sequencer import WorkloadSequencer, make_compatibility_workloads

__all__ = ["WorkloadSequencer", "make_compatibility_workloads"]
