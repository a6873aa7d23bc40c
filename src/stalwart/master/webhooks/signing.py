"""How each delivery is signed and retried: HMAC-SHA256 over `<timestamp>,<body>` with `webhooks.signing_key`
(hex), its headers, and the back-off between attempts (1 s doubling, at most `MAX_ATTEMPTS`). Pure."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE = "X-Stalwart-Signature"
TIMESTAMP = "X-Stalwart-Signature-Timestamp"
DELIVERY_ID = "X-Stalwart-Delivery-Id"
EVENT_TYPE = "X-Stalwart-Event-Type"
# Determined's names of the same two values, for receivers written for Determined
DET_SIGNATURE, DET_TIMESTAMP = "X-Determined-AI-Signature", "X-Determined-AI-Signature-Timestamp"

MAX_ATTEMPTS = 10
FIRST_DELAY_S = 1.0


def signature(key: str, timestamp: int, body: bytes) -> str:
    """hex(HMAC-SHA256(key, f"{timestamp}," + body)): what a receiver recomputes to trust a delivery."""
    return hmac.new(key.encode(), f"{timestamp},".encode() + body, hashlib.sha256).hexdigest()


def headers(key: str, timestamp: int, body: bytes, delivery_id: str, event_type: str) -> dict[str, str]:
    """The headers of one attempt: the same delivery id on every retry, a fresh timestamp and signature."""
    sig = signature(key, timestamp, body)
    return {"Content-Type": "application/json; charset=UTF-8", SIGNATURE: sig, TIMESTAMP: str(timestamp),
            DET_SIGNATURE: sig, DET_TIMESTAMP: str(timestamp), DELIVERY_ID: delivery_id, EVENT_TYPE: event_type}


def retry_delay(attempts: int) -> float | None:
    """Seconds to wait after the `attempts`-th failed attempt (1, 2, 4, ...); None once MAX_ATTEMPTS have failed."""
    if attempts >= MAX_ATTEMPTS:
        return None
    return FIRST_DELAY_S * float(2 ** (attempts - 1))
