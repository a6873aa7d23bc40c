"""Who may call a route: the one list of auth kinds the route table and the route wiring use."""

from __future__ import annotations

import enum


class AuthKind(str, enum.Enum):
    OPEN = "open"  # anyone: the master's identity, the OpenAPI document, static assets
    CLUSTER = "cluster"  # agents, with the cluster token
    ALLOCATION = "allocation"  # a trial process, with its allocation's token
    USER = "user"  # a person or a script (the CLI, the UI); enforced by a later identity issue
    PROXY = "proxy"  # a user's traffic to a task's service (/proxy/...): its owner (a TensorBoard: its readers)


class Scope(str, enum.Enum):
    """What a user route's permission is checked on (the route table's `scope`; identity.authz enforces it).

    The master refuses to register a user route whose scope does not fit its path and permission, and the
    authorization conformance suite (tests/integration/test_authz_conformance.py) calls every route as each
    kind of caller, so an object a route reads can never go unchecked."""

    PATH = "path"  # the objects its path values name (PATH_VALUES), each found and checked
    QUERY = "query"  # the object its query values name (a resolver per route in identity.authz)
    BODY = "body"  # objects its body names: the handler checks each one (identity.authz.require)
    LIST = "list"  # a listing: the handler shows only what the caller may see (or shows it anonymously)
    OWN = "own"  # the caller's own session, account or tokens
    CLUSTER = "cluster"  # the cluster as a whole: only a permission no workspace role grants


class PathValue(str, enum.Enum):
    """What a path value of a route names."""

    WORKSPACE_OBJECT = "workspace object"  # lives in a workspace: experiment, trial, checkpoint, command, ...
    ACCOUNT_OBJECT = "account object"  # belongs to a user: a user's account, an access token
    CLUSTER_OBJECT = "cluster object"  # belongs to the cluster: an agent, a resource pool, a group, a role
    NOT_AN_OBJECT = "not an object"  # a verb or a file name: `action`, a static file's `version` and `path`
    ALLOCATION = "allocation"  # an allocation: only agents and its own trial name it


PATH_VALUES: dict[str, PathValue] = {
    "exp_id": PathValue.WORKSPACE_OBJECT, "trial_id": PathValue.WORKSPACE_OBJECT,
    "uuid": PathValue.WORKSPACE_OBJECT, "cmd_id": PathValue.WORKSPACE_OBJECT, "task_id": PathValue.WORKSPACE_OBJECT,
    "notebook_id": PathValue.WORKSPACE_OBJECT, "tensorboard_id": PathValue.WORKSPACE_OBJECT,
    "shell_id": PathValue.WORKSPACE_OBJECT,
    "job_id": PathValue.WORKSPACE_OBJECT, "project_id": PathValue.WORKSPACE_OBJECT,
    "workspace_id": PathValue.WORKSPACE_OBJECT, "model_name": PathValue.WORKSPACE_OBJECT,
    "webhook_id": PathValue.WORKSPACE_OBJECT,  # a workspace's webhook; the cluster's (no workspace): on the cluster
    "template_name": PathValue.WORKSPACE_OBJECT,  # a configuration template, by its name
    "username": PathValue.ACCOUNT_OBJECT, "token_id": PathValue.ACCOUNT_OBJECT,
    "agent_id": PathValue.CLUSTER_OBJECT, "pool": PathValue.CLUSTER_OBJECT, "group_name": PathValue.CLUSTER_OBJECT,
    "role": PathValue.CLUSTER_OBJECT,
    "action": PathValue.NOT_AN_OBJECT, "version": PathValue.NOT_AN_OBJECT, "path": PathValue.NOT_AN_OBJECT,
    "version_num": PathValue.NOT_AN_OBJECT,  # a model's version: checked on its model (`model_name`)
    "external_id": PathValue.NOT_AN_OBJECT,  # a detached experiment's external id: checked on its body's project
    "allocation_id": PathValue.ALLOCATION,
}
"""Every path value any route may have, by name. A route with a path value not listed here cannot be declared
(api/routes_table.py refuses it): a new kind of object must first say what it is, and identity.authz how to find
it."""
