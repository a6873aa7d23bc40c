"""The cluster domain: agent sessions (registration and reconciliation, the action long-poll, enable/disable/drain)
and agents' own credentials (enrollment with the cluster token, the check of every agent call, revocation).

Owns the rows of agents and of their credentials. Its face: `agents`, `credentials`."""
