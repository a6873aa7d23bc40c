"""`Client`: the one typed client of the master's REST API, every area's methods on one object."""

from __future__ import annotations

from stalwart.client.agents import AgentsApi
from stalwart.client.checkpoints import CheckpointsApi
from stalwart.client.detached import DetachedApi
from stalwart.client.experiments import ExperimentsApi
from stalwart.client.jobs import JobsApi
from stalwart.client.master import MasterApi
from stalwart.client.models import ModelsApi
from stalwart.client.notebooks import NotebooksApi
from stalwart.client.oidc import SsoApi
from stalwart.client.shells import ShellsApi
from stalwart.client.tasks import TasksApi
from stalwart.client.templates import TemplatesApi
from stalwart.client.tensorboards import TensorboardsApi
from stalwart.client.trials import TrialsApi
from stalwart.client.users import UsersApi
from stalwart.client.webhooks import WebhooksApi
from stalwart.client.workspaces import WorkspacesApi


class Client(ExperimentsApi, TrialsApi, CheckpointsApi, AgentsApi, JobsApi, TasksApi, UsersApi, WorkspacesApi,
             ModelsApi, WebhooksApi, SsoApi, TemplatesApi, TensorboardsApi, NotebooksApi,
             ShellsApi, DetachedApi, MasterApi):
    """One master. `retry_for` > 0 keeps retrying connection failures and 5xx answers that long (seconds).

    A method per operation, returning the response model (`get_experiment(id).experiment.state`); the
    untyped `get`/`post`/`stream_lines` of the transport remain for tests that probe the API itself."""
