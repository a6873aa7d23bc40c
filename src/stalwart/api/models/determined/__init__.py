"""Determined 0.38.1's REST messages, as its own CLI and SDK send and read them (proto-JSON: camelCase names,
enums as `STATE_...` strings, RFC 3339 times, int64 as strings, every field emitted). The Determined listener's
route table (`api/determined_routes.py`) names them; `../shared/design/det-wire.md` is the record of the wire."""
