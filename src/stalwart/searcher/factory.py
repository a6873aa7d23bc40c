"""Build the search method an expanded experiment config asks for."""

from __future__ import annotations

from stalwart.api.errors import ConfigError
from stalwart.config import views
from stalwart.config import resolve_const_hparams
from stalwart.searcher.base import SearchMethod
from stalwart.searcher.single import SingleSearch


def make_search_method(config: dict) -> SearchMethod:
    name = config["searcher"]["name"]
    length = views.max_length(config)
    if name == "single":
        return SingleSearch(
            resolve_const_hparams(config.get("hyperparameters") or {}),
            views.experiment_seed(config),
            length.value if length is not None else None,
        )
    raise ConfigError(
        f"searcher.name: '{name}' is not supported by this master yet",
        details=[f"searcher.name: '{name}' is accepted by the schema but not implemented; use 'single'"],
    )
