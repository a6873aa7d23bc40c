"""/api/v1/searcher/preview: what a search would create, simulated without running anything."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Request

from stalwart.api.errors import InvalidRequest
from stalwart.config import load_experiment_config
from stalwart.master.routes.common import body, master
from stalwart.searcher.simulate import preview

router = APIRouter(prefix="/api/v1/searcher", tags=["searcher"])


@router.post("/preview")
async def preview_search(request: Request) -> dict:
    """Body: {config: YAML text}. The config is validated exactly as `experiment create` would."""
    m = master(request)
    data = await body(request)
    text = data.get("config")
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest("config: required, the experiment config as YAML text")
    expanded = load_experiment_config(
        text, master_defaults={"checkpoint_storage": m.settings.default_checkpoint_storage()})
    result = preview(expanded.config)
    return {"preview": dataclasses.asdict(result), "text": result.text(), "warnings": expanded.warnings}
