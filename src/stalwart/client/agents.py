"""Agents and slots: what an agent says to the master (enrolling with the cluster token, then with its own
credential), and what users list and change (agents, their credentials, slots).

`ship_logs` is the agent's hot path: the runs go out as they are (the master validates `agents.TaskLogs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stalwart.api.models import agents, allocations, common, trials
from stalwart.client.endpoints import Api, body, endpoint

AG = "/api/v1/agents"
AL = "/api/v1/allocations"

REGISTER = endpoint("POST", AG, agents.Registered, agents.RegisterAgent)
ACTIONS = endpoint("GET", AG + "/{agent_id}/actions", agents.Actions)
LIST = endpoint("GET", AG, agents.AgentList)
ENABLE = endpoint("POST", AG + "/{agent_id}/enable", agents.AgentEnvelope)
DISABLE = endpoint("POST", AG + "/{agent_id}/disable", agents.AgentEnvelope, agents.DisableAgent)
CREDENTIALS = endpoint("GET", AG + "/credentials", agents.AgentCredentialList)
REVOKE = endpoint("POST", AG + "/{agent_id}/revoke", agents.RevokedAgentCredential, agents.RevokeAgentCredential)
SLOTS = endpoint("GET", "/api/v1/slots", agents.SlotList)
TASK_LOGS = endpoint("POST", "/api/v1/task/logs", trials.Accepted, agents.TaskLogs)
CONTEXT = endpoint("GET", AL + "/{allocation_id}/context", allocations.Context)
STARTED = endpoint("POST", AL + "/{allocation_id}/started", allocations.StartedAnswer, allocations.Started)
SERVICE = endpoint("POST", AL + "/{allocation_id}/service", common.Empty, allocations.ServiceStarted)
ACTIVITY = endpoint("POST", AL + "/{allocation_id}/activity", common.Empty)
EXITED = endpoint("POST", AL + "/{allocation_id}/exited", common.Empty, allocations.Exited)


class AgentsApi(Api):
    # -- the agent ----------------------------------------------------------------------------------
    def use_agent_credential(self, credential: str) -> None:
        """Present this agent's own credential from now on (instead of the cluster token, which only enrolls)."""
        self.set_session_token(credential)

    def register_agent(self, agent_id: str, *, slots: int, running_allocations: Sequence[str] = (),
                       resource_pool: str | None = None, slot_type: str | None = None, hostname: str | None = None,
                       incarnation: str | None = None, replaces: str | None = None) -> agents.Registered:
        """Enroll (with the cluster token: the answer's `credential` is this agent's own, given once) or register
        again (with that credential)."""
        return self.call(REGISTER, json_body=body(
            agents.RegisterAgent, agent_id=agent_id, slots=slots, running_allocations=list(running_allocations),
            resource_pool=resource_pool, slot_type=slot_type, hostname=hostname, incarnation=incarnation,
            replaces=replaces))

    def agent_actions(self, agent_id: str, *, wait_s: float, known: Sequence[str] = ()) -> agents.Actions:
        """What the agent must start and kill; the master answers at once when there is something, else after
        `wait_s` seconds (a long poll). `known`: the allocations the agent runs."""
        return self.call(ACTIONS, path={"agent_id": agent_id}, params={"timeout": wait_s, "known": list(known)},
                         timeout=wait_s + 15)

    def allocation_context(self, allocation_id: str) -> allocations.Context:
        return self.call(CONTEXT, path={"allocation_id": allocation_id})

    def allocation_started(self, allocation_id: str, *, agent_id: str, pid: int | None) -> allocations.StartedAnswer:
        return self.call(STARTED, path={"allocation_id": allocation_id},
                         json_body=body(allocations.Started, agent_id=agent_id, pid=pid))

    def allocation_service(self, allocation_id: str, *, port: int) -> common.Empty:
        """The task's server answers on `port` of this machine (its allocation token says which task)."""
        return self.call(SERVICE, path={"allocation_id": allocation_id},
                         json_body=body(allocations.ServiceStarted, port=port))

    def allocation_activity(self, allocation_id: str) -> common.Empty:
        """The task is in use now (a kernel runs, a session is open): its idle timeout starts over."""
        return self.call(ACTIVITY, path={"allocation_id": allocation_id})

    def allocation_exited(self, allocation_id: str, *, agent_id: str, exit_code: int | None,
                          agent_lost: bool = False, setup_failed: bool = False) -> common.Empty:
        """`setup_failed`: the task never ran (its container could not be set up); it uses up no restart."""
        return self.call(EXITED, path={"allocation_id": allocation_id}, json_body=body(
            allocations.Exited, agent_id=agent_id, exit_code=exit_code, agent_lost=agent_lost,
            setup_failed=setup_failed))

    def ship_logs(self, runs: Sequence[Mapping[str, Any]]) -> trials.Accepted:
        """Log lines as `agents.LogRun`s: {allocation_id, trial_id, agent_id, rank_id, stdtype, source, level,
        lines: [(timestamp, text), ...]}. Sent unchanged; the master checks them."""
        return self.call(TASK_LOGS, json_body={"runs": runs})

    # -- users --------------------------------------------------------------------------------------
    def list_agents(self) -> agents.AgentList:
        return self.call(LIST)

    def enable_agent(self, agent_id: str) -> agents.AgentEnvelope:
        return self.call(ENABLE, path={"agent_id": agent_id}, json_body={})

    def disable_agent(self, agent_id: str, *, drain: bool = False) -> agents.AgentEnvelope:
        return self.call(DISABLE, path={"agent_id": agent_id}, json_body=body(agents.DisableAgent, drain=drain))

    def list_agent_credentials(self) -> agents.AgentCredentialList:
        return self.call(CREDENTIALS)

    def revoke_agent(self, agent_id: str, *, reenroll: bool = False) -> agents.RevokedAgentCredential:
        """Cut the agent off (its credential is refused from its next call); `reenroll`: its id may enroll again
        with the cluster token."""
        return self.call(REVOKE, path={"agent_id": agent_id},
                         json_body=body(agents.RevokeAgentCredential, reenroll=reenroll))

    def list_slots(self) -> agents.SlotList:
        return self.call(SLOTS)
