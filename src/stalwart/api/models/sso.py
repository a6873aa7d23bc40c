"""Single sign-on (OpenID Connect) bodies: whether a master offers it, and a CLI's trade of its one-time code."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from stalwart.api.models.common import Request, Response


class SsoInfo(Response):
    """Whether this master signs users in through an OpenID Connect provider, and the provider's name."""

    enabled: bool
    provider: str | None = None


class SsoCodeExchange(Request):
    """The one-time code the master gave the CLI's login (loopback redirect or pasted), and the CLI's secret
    verifier whose SHA-256 (base64url) it sent when the login started."""

    code: Annotated[str, Field(min_length=1, max_length=200)]
    verifier: Annotated[str, Field(min_length=43, max_length=128)]
