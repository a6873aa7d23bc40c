"""Endpoints: the route table's entries as the client calls them (URL template, request and response models).

Each endpoint is looked up in `stalwart.api.routes_table` when this package is imported, and its models must be
the table's: a client that drifts from the contract fails at import, not at the first call.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.api.routes_table import lookup
from stalwart.client.http import Params, Transport

M = TypeVar("M", bound=BaseModel)
PathValue = str | int


@dataclass(frozen=True)
class Route:
    """One route of the table: `template` is its path with {placeholders}."""

    method: str
    template: str

    def path(self, **values: PathValue) -> str:
        """The template filled in; each value is percent-encoded, so an id cannot reach another route."""
        return self.template.format(**{k: quote(str(v), safe="") for k, v in values.items()})


@dataclass(frozen=True)
class Endpoint(Route, Generic[M]):
    """A route answering JSON: `response` is the model of its answer (of each line, for streams)."""

    response: type[M]
    request: type[BaseModel] | None = None

    def parse(self, raw: bytes | str) -> M:
        """The answer as its model; a body the contract does not allow says which route answered it."""
        try:
            return self.response.model_validate_json(raw)
        except ValidationError as err:
            raise StalwartError(f"the master's answer to {self.method} {self.template} does not match the API "
                                f"contract: {_problems(err)}") from None


def file_route(method: str, template: str) -> Route:
    """The table's entry for a route answering a file (not JSON)."""
    spec = lookup(method, template)
    if spec.response is not None:
        raise TypeError(f"{method} {template} answers {spec.response.__name__}, not a file")
    return Route(method, template)


def endpoint(method: str, template: str, response: type[M], request: type[BaseModel] | None = None) -> Endpoint[M]:
    """The table's entry for `method template`, checked against the models the client uses."""
    spec = lookup(method, template)
    table_response = spec.stream_item if spec.streaming else spec.response
    if table_response is not response or spec.request is not request:
        raise TypeError(f"the client's models for {method} {template} ({response.__name__}, "
                        f"{getattr(request, '__name__', None)}) differ from the route table's "
                        f"({getattr(table_response, '__name__', None)}, {getattr(spec.request, '__name__', None)})")
    return Endpoint(method, template, response, request)


def body(model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """A request body checked against its model before it leaves (a clear error names the bad fields);
    only the fields given are sent."""
    try:
        checked = model.model_validate(fields)
    except ValidationError as err:
        raise InvalidRequest(f"invalid {model.__name__} request: {_problems(err)}") from None
    return checked.model_dump(mode="json", exclude_unset=True)


def _problems(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in err.errors()[:10])


class Api(Transport):
    """Typed calls: each area of the API (experiments, trials, agents...) is a subclass adding its methods."""

    def call(self, ep: Endpoint[M], *, path: dict[str, PathValue] | None = None, json_body: Any = None,
             params: Params | None = None, timeout: float | None = None) -> M:
        resp = self.send(ep.method, ep.path(**(path or {})), json_body=json_body, params=params, timeout=timeout)
        return ep.parse(resp.content or b"{}")

    def call_bytes(self, route: Route, *, path: dict[str, PathValue]) -> bytes:
        return self.send(route.method, route.path(**path)).content

    def call_stream(self, ep: Endpoint[M], *, path: dict[str, PathValue], params: Params | None = None) -> Iterator[M]:
        for line in self.lines(ep.path(**path), params):
            yield ep.parse(line)
