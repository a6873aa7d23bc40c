"""A Jupyter server extension for JupyterLab behind the master's proxy: the service token stays out of the page.

JupyterLab writes its server's token into every page it serves (`page_config["token"]`), and its code then sends
`Authorization: token <it>` with each API call and WebSocket. Behind the proxy that is wrong twice: the browser must
never hold the service token (the proxy adds it to every request it passes on, master/proxy/headers.py), and the
master reads a browser's `Authorization` as a master session, refusing it. This extension blanks the token in
JupyterLab's pages (a `page_config_hook`, jupyterlab_server's per-request hook), so the browser's calls carry only
its master cookie and the proxy supplies the token; and in Jupyter Server's own pages (its error pages, for one,
carry it as `data-jupyter-api-token` for a signed-in caller), by serving its `page.html` without that block.

Enabled on JupyterLab's command line by the notebook's entrypoint (master/tasks/notebooks.py):
`--ServerApp.jpserver_extensions=stalwart.harness.jupyter_proxied=True`.
"""

from __future__ import annotations

from typing import Any

from jinja2 import BaseLoader, ChoiceLoader, DictLoader, Environment, PrefixLoader, TemplateNotFound

ORIGINAL = "jupyter-original"
PAGE_WITHOUT_TOKEN = f'{{% extends "{ORIGINAL}/page.html" %}}{{% block params %}}{{% endblock params %}}'
"""Jupyter Server's base page with its `params` block (the token, for a signed-in caller) left empty."""


def without_token(_handler: Any, page_config: dict[str, Any]) -> dict[str, Any]:
    """The page's config with no token in it."""
    page_config["token"] = ""
    return page_config


def hide_token_in_pages(env: Environment) -> None:
    """Make `env` (a Jinja environment of the server's) render `page.html`, the page every other extends, without
    the token; an environment with no `page.html` is left as it is."""
    original = env.loader
    if original is None:
        return
    try:
        original.get_source(env, "page.html")
    except TemplateNotFound:
        return
    loaders: list[BaseLoader] = [DictLoader({"page.html": PAGE_WITHOUT_TOKEN}), PrefixLoader({ORIGINAL: original}),
                                 original]
    env.loader = ChoiceLoader(loaders)
    if env.cache is not None:
        env.cache.clear()


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    settings = serverapp.web_app.settings
    settings["page_config_hook"] = without_token
    for name, env in list(settings.items()):
        if name.endswith("jinja2_env") and isinstance(env, Environment):
            hide_token_in_pages(env)
