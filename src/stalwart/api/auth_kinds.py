"""Who may call a route: the one list of auth kinds the route table and the route wiring use."""

from __future__ import annotations

import enum


class AuthKind(str, enum.Enum):
    OPEN = "open"  # anyone: the master's identity, the OpenAPI document, static assets
    CLUSTER = "cluster"  # agents, with the cluster token
    ALLOCATION = "allocation"  # a trial process, with its allocation's token
    USER = "user"  # a person or a script (the CLI, the UI); enforced by a later identity issue
