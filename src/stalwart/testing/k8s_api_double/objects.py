"""TEST DOUBLE of the Kubernetes API server — not a Kubernetes implementation.

Small pure helpers for the double: Kubernetes `Status` errors, resource quantities ("500m", "4Gi"), object
names (DNS-1123), label selectors, timestamps and random name suffixes, as the real API server spells them.
"""

from __future__ import annotations

import datetime
import re
import secrets
from collections.abc import Mapping
from typing import Any

JsonObject = dict[str, Any]

REASON_BY_CODE = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$")
_BINARY_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the real apiserver's generateName alphabet


class ApiError(Exception):
    """An answer of the API as a Kubernetes `Status` object with an HTTP code."""

    def __init__(self, code: int, message: str, reason: str | None = None, details: JsonObject | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASON_BY_CODE.get(code, "Unknown")
        self.details = details

    def status(self) -> JsonObject:
        body: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    shown = f"{resource}.{group}" if group else resource
    return ApiError(404, f'{shown} "{name}" not found', "NotFound", {"name": name, "group": group, "kind": resource})


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    shown = f"{resource}.{group}" if group else resource
    details = {"name": name, "group": group, "kind": resource}
    return ApiError(409, f'{shown} "{name}" already exists', "AlreadyExists", details)


def invalid(kind: str, name: str, problems: list[str]) -> ApiError:
    message = f'{kind} "{name}" is invalid: ' + ", ".join(problems)
    return ApiError(422, message, "Invalid", {"name": name, "kind": kind})


def success_status(name: str, kind: str, group: str, uid: str) -> JsonObject:
    details = {"name": name, "group": group, "kind": kind, "uid": uid}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def name_problems(name: object, field: str = "metadata.name", max_length: int = 63) -> list[str]:
    """What the API server's validation would say of an object name (DNS-1123 subdomain, length bound)."""
    if not isinstance(name, str) or not name:
        return [f"{field}: Required value: name or generateName is required"]
    problems = []
    if len(name) > max_length:
        problems.append(f'{field}: Invalid value: "{name}": must be no more than {max_length} characters')
    if not _DNS1123_SUBDOMAIN.match(name):
        problems.append(
            f'{field}: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return problems


def label_problems(value: object, field: str) -> list[str]:
    if not isinstance(value, str) or not _DNS1123_LABEL.match(value) or len(value) > 63:
        return [f'{field}: Invalid value: "{value}": a lowercase RFC 1123 label is required']
    return []


def random_suffix(length: int = 5) -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(length))


def now_timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_quantity(value: object) -> float:
    """A Kubernetes quantity as a number: "500m" -> 0.5, "4Gi" -> 4 * 2**30, 2 -> 2."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    if text.endswith("m") and text[:-1].replace(".", "", 1).isdigit():
        return float(text[:-1]) / 1000
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*)$': {text!r}")
    number, suffix = float(match.group(1)), match.group(2)
    if suffix in _BINARY_SUFFIX:
        return number * _BINARY_SUFFIX[suffix]
    if suffix in _DECIMAL_SUFFIX:
        return number * _DECIMAL_SUFFIX[suffix]
    raise ValueError(f"unknown quantity suffix {suffix!r} in {text!r}")


class LabelSelector:
    """A parsed `labelSelector` query: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`."""

    _SET = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")

    def __init__(self, text: str | None):
        self.requirements: list[tuple[str, str, frozenset[str]]] = []
        for term in _split_terms(text or ""):
            self.requirements.append(self._parse_term(term))

    def _parse_term(self, term: str) -> tuple[str, str, frozenset[str]]:
        set_match = self._SET.match(term)
        if set_match:
            values = frozenset(v.strip() for v in set_match.group(3).split(",") if v.strip())
            return set_match.group(1), set_match.group(2), values
        for operator in ("!=", "==", "="):
            if operator in term:
                key, value = term.split(operator, 1)
                return key.strip(), "notin" if operator == "!=" else "in", frozenset([value.strip()])
        if term.startswith("!"):
            return term[1:].strip(), "!exists", frozenset()
        if not re.match(r"^[\w./-]+$", term):
            raise ApiError(400, f"unable to parse requirement: invalid label selector term {term!r}", "BadRequest")
        return term, "exists", frozenset()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        for key, operator, values in self.requirements:
            present = key in labels
            if operator == "in" and (not present or labels[key] not in values):
                return False
            if operator == "notin" and present and labels[key] in values:
                return False
            if operator == "exists" and not present:
                return False
            if operator == "!exists" and present:
                return False
        return True


class Selector:
    """A list or watch's `labelSelector` and `fieldSelector` together (fields: `metadata.name`,
    `metadata.namespace`, `spec.nodeName`, `status.phase`, with `=`, `==` or `!=`)."""

    FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")

    def __init__(self, labels: str | None = None, fields: str | None = None):
        self.labels = LabelSelector(labels)
        self.fields: list[tuple[str, bool, str]] = []
        for term in _split_terms(fields or ""):
            negated = "!=" in term
            key, _, value = term.replace("!=", "=").replace("==", "=").partition("=")
            if key.strip() not in self.FIELDS:
                shown = ", ".join(self.FIELDS)
                raise ApiError(400, f'field label not supported: "{key.strip()}" (the double knows {shown})')
            self.fields.append((key.strip(), negated, value.strip()))

    def matches(self, obj: JsonObject) -> bool:
        if not self.labels.matches(obj.get("metadata", {}).get("labels")):
            return False
        for path, negated, value in self.fields:
            section, _, key = path.partition(".")
            actual = str((obj.get(section) or {}).get(key) or "")
            if (actual == value) == negated:
                return False
        return True


def _split_terms(text: str) -> list[str]:
    """Split a selector at the commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]
