"""A template merged under a new experiment's or task's config (`config.templates`: the config wins, Determined's
merge rules), once, at creation: the merged config is what the experiment or task stores, so a later change of the
template changes nothing stored. The caller must be allowed to view the template (view_templates on its workspace);
its secrets then reach the new experiment's or task's config (never an answer: those show them hidden).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest
from stalwart.config import templates as rules
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import templates as q
from stalwart.master.service import Master


def template_config(m: Master, ident: Identity, name: str) -> dict[str, Any]:
    """The stored config of template `name` (secrets as stored), which the caller may view: 400 naming a template
    that does not exist, 403 naming view_templates."""
    with m.db.begin() as conn:
        row = q.find(conn, name)
    if row is None:
        raise InvalidRequest(f"template: there is no template named {name!r} (see `stalwart template list`; "
                             "`stalwart template set NAME FILE` makes one)")
    authz.require(m, ident, P.VIEW_TEMPLATES, authz.Target(f"template {name}", row["owner"], row["workspace_id"]))
    return dict(row["config"])


def expand(m: Master, ident: Identity, name: str | None, config: dict[str, Any],
           keys: Collection[str] | None = None) -> dict[str, Any]:
    """A task's config (a mapping) with template `name` merged under it; `config` itself when `name` is None.
    `keys`: the top-level keys the task's kind has (the template's others are left out); None: all of them."""
    if name is None:
        return config
    return rules.expand(config, template_config(m, ident, name), keys)


def expand_text(m: Master, ident: Identity, name: str | None, config_text: str) -> str:
    """An experiment config's YAML text with template `name` merged under it; the text itself when `name` is
    None."""
    if name is None:
        return config_text
    return rules.expand_text(config_text, template_config(m, ident, name))
