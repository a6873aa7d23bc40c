"""The search preview: what a search would create, simulated without running anything."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from stalwart.api.models.common import Request, Response


class PreviewRequest(Request):
    config: str = Field(min_length=1, description="the experiment config as YAML text")


class Preview(Response):
    searcher: str
    total_trials: int = Field(ge=0)
    unit: str | None = None
    rows: list[list[int | float]]
    brackets: list[Any]
    validations: str = Field("", description="where the simulated trials validate (searchers with rungs only)")
    warnings: list[str] = Field(default_factory=list,
                                description="rungs that fall between the validations the config's "
                                            "min_validation_period produces")


class PreviewAnswer(Response):
    preview: Preview
    text: str
    warnings: list[str] = Field(description="the config's warnings, then the preview's (`preview.warnings`)")
