"""The master service: REST API, experiment and trial state machines, scheduling, intake."""
