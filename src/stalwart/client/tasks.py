"""Commands and tasks: run a program on the cluster, describe, list, kill, follow its output, change its job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stalwart.api.models import jobs, tasks, trials
from stalwart.client.endpoints import Api, body, endpoint

C = "/api/v1/commands"

CREATE = endpoint("POST", C, tasks.CommandEnvelope, tasks.CreateCommand)
DESCRIBE = endpoint("GET", C + "/{cmd_id}", tasks.CommandEnvelope)
KILL = endpoint("POST", C + "/{cmd_id}/kill", tasks.CommandEnvelope)
UPDATE_JOB = endpoint("PATCH", C + "/{cmd_id}/job", jobs.JobEnvelope, jobs.UpdateJob)
LIST = endpoint("GET", "/api/v1/tasks", tasks.TaskList)
TASK = endpoint("GET", "/api/v1/tasks/{task_id}", tasks.TaskEnvelope)
LOGS = endpoint("GET", "/api/v1/tasks/{task_id}/logs", trials.LogEntry)


class TasksApi(Api):
    def create_command(self, config: str | dict[str, Any], context_b64: str | None = None, *,
                       template: str | None = None) -> tasks.CommandEnvelope:
        """`config`: YAML text or a mapping with `entrypoint`; `context_b64`: base64 of a context .tgz; `template`: a
        configuration template the master merges under the config (the merged config is stored)."""
        fields: dict[str, Any] = {"config": config}
        if template is not None:
            fields["template"] = template
        if context_b64 is not None:
            fields["context"] = context_b64
        return self.call(CREATE, json_body=body(tasks.CreateCommand, **fields))

    def get_command(self, cmd_id: int) -> tasks.CommandEnvelope:
        return self.call(DESCRIBE, path={"cmd_id": cmd_id})

    def kill_command(self, cmd_id: int) -> tasks.CommandEnvelope:
        return self.call(KILL, path={"cmd_id": cmd_id}, json_body={})

    def update_command_job(self, cmd_id: int, *, priority: int | None = None) -> jobs.JobEnvelope:
        changes = {"priority": priority} if priority is not None else {}
        return self.call(UPDATE_JOB, path={"cmd_id": cmd_id}, json_body=body(jobs.UpdateJob, **changes))

    def list_tasks(self, *, include_ended: bool = True) -> tasks.TaskList:
        return self.call(LIST, params={"all": str(include_ended).lower()})

    def get_task(self, task_id: int | str) -> tasks.TaskEnvelope:
        return self.call(TASK, path={"task_id": task_id})

    def stream_task_logs(self, task_id: int | str, *, follow: bool = False,
                         after_id: int = 0) -> Iterator[trials.LogEntry]:
        """The task's output lines after `after_id`; with `follow`, new lines as they come until it ends."""
        return self.call_stream(LOGS, path={"task_id": task_id},
                                params={"follow": str(follow).lower(), "after_id": after_id})
