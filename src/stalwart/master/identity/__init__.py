"""Identity: users, their passwords, sessions and access tokens, who may do what, the audit log, machines' tokens.

Its face: `sessions` (authenticate a request, open and end sessions), `authz` (`require`, the one permission
check), `accounts` (bootstrap, users' life cycle, login), `audit` (the audit-log middleware), `tokens` (the
agents' cluster token and credentials, allocation tokens for trial processes: pure, so the `Master` object under
it may use them too). Routes and the allocation life cycle (a task's owner session) use it; it sits under both
(`.importlinter`).
"""
