"""/api/v1/searcher/preview: what a search would create, simulated without running anything."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Request

from stalwart.api.errors import InvalidRequest
from stalwart.api.models.searcher import Preview, PreviewAnswer, PreviewRequest
from stalwart.config import load_experiment_config
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.searcher.simulate import preview

router = APIRouter(prefix="/api/v1/searcher", tags=["searcher"])


@route(router, "POST", "/preview")
async def preview_search(request: Request, payload: PreviewRequest) -> PreviewAnswer:
    """Body: {config: YAML text}. The config is validated exactly as `experiment create` would. The warnings are
    the config's, then the preview's: rungs that fall between the validations of `min_validation_period`."""
    m = master(request)
    if not payload.config.strip():
        raise InvalidRequest("config: required, the experiment config as YAML text")
    expanded = load_experiment_config(
        payload.config, master_defaults={"checkpoint_storage": m.settings.default_checkpoint_storage()})
    result = preview(expanded.config)
    return PreviewAnswer(preview=Preview.model_validate(dataclasses.asdict(result)), text=result.text(),
                         warnings=[*expanded.warnings, *result.warnings])
