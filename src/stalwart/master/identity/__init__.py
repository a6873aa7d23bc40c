"""Identity: users, their passwords, sessions and access tokens, who may do what, and the audit log.

Its face: `sessions` (authenticate a request, open and end sessions), `authz` (`require`, the one permission
check), `accounts` (bootstrap, users' life cycle, login), `audit` (the audit-log middleware). Routes and the
allocation life cycle (a task's owner session) use it; it sits under both (`.importlinter`).
"""
