"""A user route whose objects the permission check could not find is never declared or registered (issue 25, "make
the class impossible"): the route table refuses a path value `auth_kinds.PATH_VALUES` does not know, and a user
route naming no object without a scope; `identity.authz.check_declaration` refuses a scope that does not fit the
path and the permission. These are the checks `create_app` runs for every route."""

from __future__ import annotations

import pytest

from stalwart.api import permissions as P
from stalwart.api.auth_kinds import PATH_VALUES, AuthKind, PathValue, Scope
from stalwart.api.routes_table import ROUTES, RouteSpec, _r
from stalwart.master.identity import authz

USER = AuthKind.USER


def test_a_path_value_naming_an_unknown_kind_of_object_cannot_be_declared() -> None:
    with pytest.raises(ValueError, match=r"\['widget_id'\] name nothing"):
        _r("GET", "/api/v1/widgets/{widget_id}", USER, None, permission=P.VIEW_EXPERIMENTS)


def test_a_user_route_naming_no_object_must_say_what_it_is_checked_on() -> None:
    with pytest.raises(ValueError, match="must give its scope"):
        _r("GET", "/api/v1/widgets", USER, None, permission=P.VIEW_EXPERIMENTS)
    assert _r("GET", "/api/v1/experiments/{exp_id}/x", USER, None, permission=P.VIEW_EXPERIMENTS).scope is Scope.PATH


@pytest.mark.parametrize(("spec", "why"), [
    (RouteSpec("GET", "/api/v1/everything", USER, None, permission=P.VIEW_EXPERIMENTS, scope=Scope.CLUSTER),
     "cannot be checked on the whole cluster"),  # the shape of holes 1 to 3: a workspace read checked nowhere
    (RouteSpec("GET", "/api/v1/events", USER, None, permission=P.VIEW_EXPERIMENTS, scope=Scope.QUERY),
     "does not say which query values name what"),
    (RouteSpec("GET", "/api/v1/experiments/{exp_id}/x", USER, None, permission=P.VIEW_EXPERIMENTS,
               scope=Scope.LIST), "its scope is `path`"),
    (RouteSpec("GET", "/api/v1/agents/{agent_id}/x", USER, None, permission=P.VIEW_EXPERIMENTS, scope=Scope.PATH),
     "names no object"),
    (RouteSpec("POST", "/api/v1/x", USER, None, permission=P.EDIT_EXPERIMENTS, scope=Scope.LIST),
     "not a reading permission"),
    (RouteSpec("GET", "/api/v1/x", USER, None, permission=P.VIEW_EXPERIMENTS, scope=Scope.OWN),
     "not an account permission"),
])
def test_a_scope_that_does_not_fit_is_refused(spec: RouteSpec, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        authz.check_declaration(spec)


def test_every_user_route_of_the_table_is_declared_as_the_check_can_decide() -> None:
    users = [s for s in ROUTES if s.auth is USER]
    assert len(users) > 80
    for spec in users:
        authz.check_declaration(spec)


def test_the_check_finds_every_kind_of_object_a_path_can_name() -> None:
    named = {k for k, v in PATH_VALUES.items() if v in (PathValue.WORKSPACE_OBJECT, PathValue.ACCOUNT_OBJECT)}
    assert set(authz.FINDERS) == named


def test_a_tasks_credential_lacks_what_changes_identity_or_the_cluster() -> None:
    assert {P.MANAGE_USERS, P.MANAGE_OWN_TOKENS, P.ASSIGN_ROLES, P.MANAGE_GROUPS, P.MANAGE_AGENTS, P.BIND_POOLS,
            P.EDIT_OWN_ACCOUNT, P.MANAGE_ALL_TOKENS} <= P.NOT_FOR_TASKS
    assert not {P.VIEW_EXPERIMENTS, P.CREATE_EXPERIMENTS, P.EDIT_EXPERIMENTS, P.VIEW_TASKS} & P.NOT_FOR_TASKS
