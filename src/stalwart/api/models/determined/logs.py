"""A trial's log lines as Determined's `TrialLogs` stream carries them: one `{"result": TrialLogsResponse}` a line."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stalwart.api.models.determined.wire import DetResponse, Rfc3339

LogLevel = Literal["LOG_LEVEL_UNSPECIFIED", "LOG_LEVEL_TRACE", "LOG_LEVEL_DEBUG", "LOG_LEVEL_INFO",
                   "LOG_LEVEL_WARNING", "LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"]
OrderBy = Literal["ORDER_BY_UNSPECIFIED", "ORDER_BY_ASC", "ORDER_BY_DESC"]


class TrialLogsResponse(DetResponse):
    """One line. `message` is the line as the real master formats it for display, with its trailing newline
    (`det trial logs` prints it as it is); the optional fields are left out when the line has no value for them."""

    id: str = Field(description="the line's id (a 64-bit integer, as a string)")
    timestamp: Rfc3339
    message: str
    level: LogLevel
    trialId: int
    agentId: str | None = None
    containerId: str | None = None
    rankId: int | None = None
    log: str | None = None
    source: str | None = None
    stdtype: str | None = None


class TrialLogsLine(DetResponse):
    """`{"result": ...}`: what each line of the stream is (grpc-gateway's wrapper of a server stream)."""

    result: TrialLogsResponse
