"""Agents' own credentials: enrollment with the cluster token, the check of every agent call, revocation.

The cluster token only enrolls. `POST /api/v1/agents` with it, for an agent id without a credential, answers with
a fresh credential for that agent (random, shown once; the table keeps its SHA-256), and the agent presents that
credential from then on. Whether the cluster token may enroll is the master config's `agents.enrollment`:
`loopback` (the default: from this machine only), `open` (from anywhere) or `closed`. A call that names an agent
or an allocation passes only with the credential of that agent (of one of the allocation's containers' agents).

An agent registered before agents had credentials has an agents row and no credential: the cluster token claims
one for it once (unless enrollment is `closed`), so upgrades keep working. An answer lost on the way is issued
again only to the agent process it was issued to (its incarnation, or the one that took over its work directory),
and only while the credential has never been used.

Checks read a cache of the credentials seen (hash -> `service.KnownCredential`), filled from the database on a
miss and cleared on every change (issue, revoke), as the user sessions' cache is: a revoked credential is refused
from the next call.
`last_used` is written at most once a minute per credential. (One master process; see ARCHITECTURE.md.)
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from fastapi import Request

from stalwart.api.errors import AuthError, ForbiddenError, InvalidStateError, NotFoundError
from stalwart.api.models.agents import AgentCredential
from stalwart.master.identity import tokens
from stalwart.master.log_rows import Row as LogRow
from stalwart.master.queries import (
    agent_credentials as q,
    agents as agent_rows,
    engine_jobs,
    instances as instance_rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import KnownCredential, Master, now

ENROLL_PATH = "/api/v1/agents"
CREDENTIAL_FILE = "agent-credential.json"  # in the agent's work directory (agent/credential.py writes it)
USE_RESOLUTION_S = 60.0
_CACHE_MAX = 10_000
_NAMED = re.compile(r"^/api/v1/(?:agents/(?P<agent_id>[^/]+)/actions"
                    r"|allocations/(?P<allocation_id>[^/]+)/(?:context|started|exited))/?$")
_TO_ALLOW = ("set `agents: {enrollment: open}` in the master's config (or `loopback`: from the master's own machine "
             "only) and restart the master")


class InProcess:
    """The master registering an agent itself (tests, tools), not an HTTP caller:
    `agents.register(..., caller=IN_PROCESS)`."""


IN_PROCESS = InProcess()


@dataclass(frozen=True)
class JoinCaller:
    """A one-shot agent inside an engine's job (Slurm) enrolling with its job's single-use join credential: it may
    enroll only the agent ids of that allocation's containers, each once (docs/slurm.md, "Who runs the job")."""

    allocation_id: str


@dataclass(frozen=True)
class InstanceJoinCaller:
    """An elastic pool's instance enrolling its agent with the single-use join credential the provisioner minted for
    it (docs/elastic-agents.md): it may enroll only `agent_id`, once, before the credential expires."""

    instance_id: str
    agent_id: str


Caller = str | None | JoinCaller | InstanceJoinCaller
"""Who called an agent route: an agent's id, None for the cluster token (enrollment), or a job's or an instance's
join credential."""


# -- the check of each agent call -----------------------------------------------------------------------------


def authenticate(m: Master, request: Request) -> Caller:
    """The id of the agent calling, or None for the bare cluster token on the enrollment route. Refused: no token
    (401); the cluster token anywhere else, an unknown or revoked credential, or a call naming another agent or
    another agent's allocation (403). Reads headers and the path only, never the body."""
    got = tokens.bearer(request)
    if got is None:
        raise AuthError("this call needs an agent's credential (Authorization: Bearer ...): an agent gets its own "
                        "by enrolling with the cluster token (`stalwart agent run --token-file PATH`)")
    if tokens.is_cluster_token(got, m.cluster_token):
        if request.method == "POST" and request.scope.get("path", "").rstrip("/") == ENROLL_PATH:
            return None
        raise ForbiddenError("the cluster token only enrolls agents (POST /api/v1/agents); every other agent call "
                             "needs the agent's own credential, which the master gave it when it enrolled (the "
                             f"agent keeps it in {CREDENTIAL_FILE} in its work directory)")
    enrolling = request.method == "POST" and request.scope.get("path", "").rstrip("/") == ENROLL_PATH
    joining = _join_of(m, got) if enrolling else None
    if joining is not None:
        return joining
    agent_id = agent_of(m, got)
    named_agent, named_allocation = _named(request)
    if named_agent is not None and named_agent != agent_id:
        raise ForbiddenError(f"this is agent {agent_id}'s credential; it does not act for agent {named_agent}")
    if named_allocation is not None:
        check_allocation(m, agent_id, named_allocation)
    return agent_id


def _named(request: Request) -> tuple[str | None, str | None]:
    """The agent id and allocation id the request's path names: its path values once routed, else (a check run
    before routing) read from the path itself."""
    params = request.path_params
    if params:
        return params.get("agent_id"), params.get("allocation_id")
    found = _NAMED.match(request.scope.get("path", ""))
    return (found["agent_id"], found["allocation_id"]) if found else (None, None)


def _join_of(m: Master, credential: str) -> JoinCaller | InstanceJoinCaller | None:
    """The job or the elastic instance whose live join credential this is (None: it is not one). An instance's
    expired credential is refused (403) saying so."""
    token_hash = tokens.credential_hash(credential)
    with m.db.begin() as conn:
        row = engine_jobs.by_join_hash(conn, token_hash)
        instance = instance_rows.by_join_hash(conn, token_hash) if row is None else None
    if row is not None:
        return JoinCaller(row["id"])
    if instance is None:
        return None
    if instance["join_expires_at"] is None or instance["join_expires_at"] < now():
        raise ForbiddenError(f"instance {instance['provider_id'] or instance['id']}'s join credential expired (its "
                             "agent must register within the pool's max_agent_starting_period); the provisioner "
                             "terminates the instance")
    return InstanceJoinCaller(instance["id"], instance["agent_id"])


def agent_of(m: Master, credential: str) -> str:
    """The agent whose live credential this is; 403 for an unknown or revoked one."""
    token_hash = tokens.credential_hash(credential)
    known = m.agent_credential_cache.get(token_hash)
    if known is None:
        with m.db.begin() as conn:
            row = q.by_hash(conn, token_hash)
        if row is None:
            raise ForbiddenError("unknown agent credential: it is neither the cluster token nor a credential this "
                                 "master gave an agent (a master with a new database knows none of the old ones: "
                                 f"remove {CREDENTIAL_FILE} from the agent's work directory to enroll it again)")
        if len(m.agent_credential_cache) >= _CACHE_MAX:
            m.agent_credential_cache.clear()
        known = KnownCredential(row["agent_id"], row["revoked_at"], row["last_used"] or 0.0)
        m.agent_credential_cache[token_hash] = known
    if known.revoked_at is not None:
        raise ForbiddenError(f"agent {known.agent_id}'s credential was revoked by an admin; this agent is cut off "
                             "(an admin re-admits the id with `stalwart agent revoke ID --reenroll`, then the agent "
                             f"enrolls again without its old {CREDENTIAL_FILE})")
    _note_use(m, known)
    return known.agent_id


def _note_use(m: Master, known: KnownCredential) -> None:
    at = now()
    if at - known.used_written < USE_RESOLUTION_S:
        return
    known.used_written = at
    with m.db.begin() as conn:
        q.mark_used(conn, known.agent_id, at)


def check_allocation(m: Master, agent_id: str, allocation_id: str) -> None:
    """404 when there is no such allocation; 403 when none of its containers is on `agent_id`."""
    with m.db.begin() as conn:
        reached = q.reach(conn, agent_id, [allocation_id])
        exists = bool(reached) or bool(q.existing(conn, [allocation_id]))
    if not exists:
        raise NotFoundError(f"allocation {allocation_id} not found")
    if not reached:
        raise ForbiddenError(f"allocation {allocation_id} does not run on agent {agent_id}: an agent's credential "
                             "reaches only its own allocations")


def check_body_agent(agent_id: str | None, said: str) -> None:
    """A body naming an agent (an allocation's start or exit) must name the agent calling."""
    if agent_id is not None and said != agent_id:
        raise ForbiddenError(f"agent_id: {said!r} is not the agent calling ({agent_id}); an agent reports only "
                             "its own containers")


def own_log_rows(m: Master, agent_id: str, rows: list[LogRow]) -> list[LogRow]:
    """An agent's log lines, each filed under its allocation's trial and this agent. A line naming another agent's
    allocation refuses the batch (403); lines naming no allocation, or one the master no longer has, are dropped."""
    named = {r[1] for r in rows if r[1] is not None}
    with m.db.begin() as conn:
        reached = q.reach(conn, agent_id, named)
        others = q.existing(conn, named - reached.keys())
    if others:
        shown = ", ".join(sorted(others)[:3])
        raise ForbiddenError(f"log lines name allocation(s) {shown} that do not run on agent {agent_id}: an agent "
                             "ships only its own allocations' lines")
    return [(reached[r[1]], r[1], agent_id, *r[3:]) for r in rows if r[1] in reached]


# -- enrollment and registration ----------------------------------------------------------------------------------


def admit(m: Master, conn: Conn, agent_id: str, caller: Caller, peer: str | None,
          incarnation: str | None, replaces: str | None) -> str | None:
    """May this registration of `agent_id` go on? `caller`: the agent whose credential came (None: the cluster
    token; a `JoinCaller`: a job's join credential). Returns a new credential when the cluster token or a join
    credential enrolls the agent (shown once), else None."""
    if isinstance(caller, JoinCaller):
        return _admit_joining(m, conn, agent_id, caller, incarnation)
    if isinstance(caller, InstanceJoinCaller):
        return _admit_instance(m, conn, agent_id, caller, incarnation)
    if caller is not None:
        if caller != agent_id:
            raise ForbiddenError(f"this is agent {caller}'s credential; it cannot register agent {agent_id}")
        return None
    row = q.of_agent(conn, agent_id)
    if row is None:
        _check_policy(m, peer, upgrade=agent_rows.find(conn, agent_id) is not None)
    elif row["revoked_at"] is not None:
        if not row["reenroll"]:
            raise ForbiddenError(f"agent {agent_id}'s credential was revoked by an admin: the cluster token cannot "
                                 "enroll this id again (an admin allows it with `stalwart agent revoke "
                                 f"{agent_id} --reenroll`), or enroll the agent under another --agent-id")
        _check_policy(m, peer, upgrade=False)
    elif not _lost_answer(row, incarnation, replaces):
        raise ForbiddenError(
            f"agent {agent_id} has its own credential: it registers with it, not with the cluster token (the agent "
            f"keeps it in {CREDENTIAL_FILE} in its work directory; an agent moved to another work directory takes "
            f"that file along). If the file is lost, an admin revokes the old credential with `stalwart agent "
            f"revoke {agent_id} --reenroll` and the agent enrolls again")
    return _issue(m, conn, agent_id, incarnation)


def _admit_joining(m: Master, conn: Conn, agent_id: str, caller: JoinCaller, incarnation: str | None) -> str:
    """A job's one-shot agent enrolls one of its allocation's agent ids, once; when the last has, the join
    credential is spent."""
    mine = {a["id"] for a in engine_jobs.one_shot_agents(conn, caller.allocation_id)}
    if not mine:  # the job runs (its agent is here) before the master's poll has seen it: place it now, then retry
        m.poll_engines_now()
        raise InvalidStateError(f"allocation {caller.allocation_id}'s job is not placed on its nodes yet; the "
                                "master places it on its next poll of the engine: enroll again in a moment")
    if agent_id not in mine:
        raise ForbiddenError(f"this job's join credential enrolls only the agents of allocation "
                             f"{caller.allocation_id} ({', '.join(sorted(mine))}), not {agent_id}")
    if q.of_agent(conn, agent_id) is not None:
        raise ForbiddenError(f"agent {agent_id} has already enrolled with this job's join credential, which is "
                             "single-use; the agent registers with its own credential")
    credential = _issue(m, conn, agent_id, incarnation)
    if all(q.of_agent(conn, a) is not None for a in mine):
        engine_jobs.close_join(conn, caller.allocation_id)
    return credential


def _admit_instance(m: Master, conn: Conn, agent_id: str, caller: InstanceJoinCaller, incarnation: str | None) -> str:
    """An elastic instance's agent enrolls its one agent id, once: the join credential is spent by it."""
    if agent_id != caller.agent_id:
        raise ForbiddenError(f"this instance's join credential enrolls only agent {caller.agent_id}, not {agent_id}")
    if q.of_agent(conn, agent_id) is not None:
        raise ForbiddenError(f"agent {agent_id} has already enrolled with its instance's join credential, which is "
                             "single-use; the agent registers with its own credential")
    instance_rows.close_join(conn, caller.instance_id)
    return _issue(m, conn, agent_id, incarnation)


def _check_policy(m: Master, peer: str | None, *, upgrade: bool) -> None:
    """Refuse an enrollment with the cluster token that the master config's `agents.enrollment` does not allow. An
    agent registered before agents had credentials (`upgrade`) gets its own from anywhere unless it is closed."""
    policy = m.settings.cluster.agent_enrollment
    if policy == "open":
        return
    if policy == "closed":
        raise ForbiddenError("enrolling agents with the cluster token is closed on this master (agents.enrollment: "
                             f"closed in its config); to let agents enroll, {_TO_ALLOW}")
    if not upgrade and not tokens.is_loopback(peer):
        raise ForbiddenError(f"this master lets agents enroll with the cluster token only from its own machine "
                             f"(agents.enrollment: loopback, the default), and this request came from {peer or '?'};"
                             " to let agents on other machines enroll, set `agents: {enrollment: open}` in the "
                             "master's config and restart the master")


def _lost_answer(row: Row, incarnation: str | None, replaces: str | None) -> bool:
    """An enrollment whose answer never reached its agent: the credential was never used, and the same agent
    process (or the one that took over its work directory) asks again."""
    issued_to = row["issued_to"]
    return row["last_used"] is None and issued_to is not None and issued_to in (incarnation, replaces)


def _issue(m: Master, conn: Conn, agent_id: str, incarnation: str | None) -> str:
    credential = tokens.new_agent_credential()
    q.issue(conn, agent_id, tokens.credential_hash(credential), at=now(), issued_to=incarnation)
    m.agent_credential_cache.clear()
    return credential


# -- what admins do -------------------------------------------------------------------------------------------------


def listing(m: Master) -> list[AgentCredential]:
    """Every agent's credential as admins see it (never the credential itself), by agent id."""
    with m.db.begin() as conn:
        rows = q.with_agents(conn)
    return [_view(r) for r in rows]


def _view(r: Row) -> AgentCredential:
    state = "none" if r["created_at"] is None else "revoked" if r["revoked_at"] is not None else "active"
    return AgentCredential(agent_id=r["agent_id"], state=state, created_at=r["created_at"], last_used=r["last_used"],
                           revoked_at=r["revoked_at"], reenroll=bool(r["reenroll"]), registered=bool(r["registered"]))


def revoke(m: Master, agent_id: str, reenroll: bool) -> AgentCredential:
    """Cut an agent off: its credential is refused from its next call on, and the cluster token cannot claim its
    id (unless `reenroll`). An agent registered before credentials existed is cut off the same way. Its live work
    is left to the usual end: once it has been silent for agent_timeout it is lost (docs/users.md)."""
    with m.db.begin() as conn:
        if q.of_agent(conn, agent_id) is None:
            if agent_rows.find(conn, agent_id) is None:
                raise NotFoundError(f"agent {agent_id} not found: it has neither registered nor a credential "
                                    "(`stalwart agent credentials` lists them)")
            # never shown to anyone: the id only gets a revoked credential the cluster token cannot claim past
            q.issue(conn, agent_id, tokens.credential_hash(secrets.token_urlsafe(32)), at=now(), issued_to=None)
        q.revoke(conn, agent_id, at=now(), reenroll=reenroll)
        row = q.with_agents(conn, agent_id)[0]
    m.agent_credential_cache.clear()
    m.signals.notify(f"agent:{agent_id}")  # its action long-poll answers now, with a refusal
    return _view(row)
