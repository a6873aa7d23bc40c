"""A notebook's config as the command it runs (master/tasks/notebooks.py): JupyterLab under the service wrapper
with the busy probe of its idle type, clear errors for bad idle settings, and the master's idle types the same as
the wrapper's probes (harness/busy.py); the service token kept out of JupyterLab's pages
(harness/jupyter_proxied.py)."""

from __future__ import annotations

import pytest
from jinja2 import DictLoader, Environment

from stalwart.api.errors import ConfigError
from stalwart.harness.busy import NOTEBOOK_IDLE_TYPES, probe_named
from stalwart.harness.jupyter_proxied import hide_token_in_pages, without_token
from stalwart.master.tasks import notebooks


def test_the_master_knows_the_idle_types_the_wrapper_probes() -> None:
    assert notebooks.IDLE_TYPES == NOTEBOOK_IDLE_TYPES
    for idle_type in notebooks.IDLE_TYPES:
        assert probe_named(f"jupyter:{idle_type}") is not None


def test_a_notebook_runs_jupyterlab_behind_the_wrapper_with_no_token_in_its_command_line() -> None:
    shaped = notebooks.shape({"resources": {"slots": 0}, "entrypoint": ["ignored"]})
    argv = shaped["entrypoint"]
    assert argv[:6] == ["python3", "-m", "stalwart.harness.service", "--busy", "jupyter:kernels_or_terminals", "--"]
    jupyter = argv[-1]
    assert 'JUPYTER_TOKEN="$STALWART_SERVICE_TOKEN" exec python3 -m jupyterlab' in jupyter
    assert "--ServerApp.base_url={base_url}" in jupyter and "--port={port}" in jupyter
    assert "{service_token}" not in jupyter and "stalwart.harness.jupyter_proxied=True" in jupyter
    assert shaped["notebook_idle_type"] == "kernels_or_terminals" and shaped["description"] == "JupyterLab notebook"
    assert shaped["resources"] == {"slots": 0}


@pytest.mark.parametrize(("config", "message"), [
    ({"notebook_idle_type": "never"}, "notebook_idle_type: 'never' is not one of kernels_or_terminals"),
    ({"idle_timeout": "soon"}, "idle_timeout: expected a duration such as 30s, 20m or 1h"),
    ({"idle_timeout": -1}, "idle_timeout: expected a duration"),
])
def test_bad_idle_settings_are_named(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        notebooks.shape(config)


def test_the_page_config_hook_blanks_the_token() -> None:
    assert without_token(None, {"token": "secret", "baseUrl": "/proxy/notebook-3/"}) == {
        "token": "", "baseUrl": "/proxy/notebook-3/"}


def test_pages_extending_jupyter_s_base_page_carry_no_token() -> None:
    env = Environment(loader=DictLoader({
        "page.html": '<body {% block params %}data-jupyter-api-token="{{ token }}"{% endblock params %}>'
                     "{% block site %}{% endblock site %}</body>",
        "error.html": '{% extends "page.html" %}{% block site %}not found{% endblock site %}'}))
    assert "secret" in env.get_template("error.html").render(token="secret")
    hide_token_in_pages(env)
    assert env.get_template("error.html").render(token="secret") == "<body >not found</body>"
    bare = Environment(loader=DictLoader({"other.html": "x"}))
    hide_token_in_pages(bare)  # no page.html: left as it is
    assert isinstance(bare.loader, DictLoader)
