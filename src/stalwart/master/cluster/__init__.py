"""The cluster domain: agent sessions (registration, reconciliation, the action long-poll, enable/disable/drain).

Owns the rows of agents. Its face: `agents`."""
