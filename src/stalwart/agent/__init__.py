"""The per-machine agent: registers slots, starts and kills trial processes, ships their logs."""
