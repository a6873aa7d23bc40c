"""Configuration templates (docs/templates.md): named configs, each in a workspace, merged under a task's own config
when it is created. Answers show a template's secrets hidden ('********')."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from stalwart.api.models.common import Id, JsonObject, Request, Response, Timestamp

TemplateName = Annotated[str, Field(min_length=1, max_length=256, description="a template's name: unique on the "
                                    "cluster; letters, digits, '.', '_' and '-'")]
TemplateConfig = Annotated[str | JsonObject, Field(description="the template's config: YAML text of a mapping, or "
                                                               "the mapping")]
WorkspaceName = Annotated[str, Field(min_length=1, max_length=128, description="a workspace's name")]


class Template(Response):
    name: str
    workspace_id: Id
    workspace: str | None = Field(default=None, description="the name of its workspace")
    config: JsonObject = Field(description="its config, secrets hidden")
    owner: str = Field(description="who created it")
    updated_by: str = Field(description="who set its config last")
    created_at: Timestamp
    updated_at: Timestamp


class TemplateEnvelope(Response):
    template: Template


class TemplateList(Response):
    templates: list[Template] = Field(default_factory=list)


class CreateTemplate(Request):
    """POST /api/v1/templates: a new template (409 when the name is taken: PUT replaces one)."""

    name: TemplateName
    config: TemplateConfig
    workspace: WorkspaceName | None = Field(default=None, description="where it goes (default: Uncategorized)")
    workspace_id: Id | None = None


class SetTemplate(Request):
    """PUT /api/v1/templates/{template_name}: a template's new config, and (optionally) a new workspace."""

    config: TemplateConfig
    workspace: WorkspaceName | None = None
    workspace_id: Id | None = None
