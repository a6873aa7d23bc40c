"""Configuration templates (docs/templates.md): create, replace, list, describe, remove. Answers show a template's
secrets hidden."""

from __future__ import annotations

from typing import Any

from stalwart.api.models import common, templates as tp
from stalwart.client.endpoints import Api, body, endpoint
from stalwart.client.http import Params

TP = "/api/v1/templates"

LIST_TEMPLATES = endpoint("GET", TP, tp.TemplateList)
CREATE_TEMPLATE = endpoint("POST", TP, tp.TemplateEnvelope, tp.CreateTemplate)
GET_TEMPLATE = endpoint("GET", TP + "/{template_name}", tp.TemplateEnvelope)
SET_TEMPLATE = endpoint("PUT", TP + "/{template_name}", tp.TemplateEnvelope, tp.SetTemplate)
DELETE_TEMPLATE = endpoint("DELETE", TP + "/{template_name}", common.Empty)


def _placed(workspace: str | None, workspace_id: int | None) -> dict[str, Any]:
    return {k: v for k, v in (("workspace", workspace), ("workspace_id", workspace_id)) if v is not None}


class TemplatesApi(Api):
    def list_templates(self, *, workspace_id: int | None = None) -> list[tp.Template]:
        """The templates the caller may view (only one workspace's when given), by name."""
        params: Params | None = {"workspace_id": workspace_id} if workspace_id is not None else None
        return self.call(LIST_TEMPLATES, params=params).templates

    def get_template(self, name: str) -> tp.Template:
        return self.call(GET_TEMPLATE, path={"template_name": name}).template

    def create_template(self, name: str, config: str | dict[str, Any], *, workspace: str | None = None,
                        workspace_id: int | None = None) -> tp.Template:
        """A new template (`config`: YAML text of a mapping, or the mapping) in the workspace named (neither: the
        default workspace); 409 when the name is taken."""
        fields = {"name": name, "config": config, **_placed(workspace, workspace_id)}
        return self.call(CREATE_TEMPLATE, json_body=body(tp.CreateTemplate, **fields)).template

    def replace_template(self, name: str, config: str | dict[str, Any], *, workspace: str | None = None,
                         workspace_id: int | None = None) -> tp.Template:
        """An existing template's new config (and workspace, when given); 404 when there is none."""
        fields = {"config": config, **_placed(workspace, workspace_id)}
        return self.call(SET_TEMPLATE, path={"template_name": name},
                         json_body=body(tp.SetTemplate, **fields)).template

    def delete_template(self, name: str) -> None:
        self.call(DELETE_TEMPLATE, path={"template_name": name})
