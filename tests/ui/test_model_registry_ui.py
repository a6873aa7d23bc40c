"""The model registry in the web UI, in Chromium (issue 29, acceptance 6): from the header's Models link to the
models list, a model (description, labels, metadata, notes, its versions) and a version (its checkpoint, with links
to the experiment and trial it came from and to its files), each with the data the API holds."""

from __future__ import annotations

import uuid
from urllib.parse import urlparse

import pytest
import yaml

from integration.helpers import one_file_context_b64

pytestmark = pytest.mark.integration

EVIL = "<img src=x onerror=window.pwned=1>"  # user text is shown as text, never run as HTML
TRIAL = """from determined import core

with core.init() as ctx:
    for op in ctx.searcher.operations():
        ctx.train.report_validation_metrics(1, {"loss": 0.25})
        with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _):
            (path / "model.txt").write_text("weights")
        op.report_progress(1)
        op.report_completed(0.25)
"""


def _context() -> str:
    return one_file_context_b64("one_checkpoint.py", TRIAL)


def _checkpoint(c, tmp_path) -> tuple[int, int, str]:
    """A one-trial experiment run to completion with one checkpoint: (experiment id, trial id, checkpoint uuid)."""
    config = {"name": "registry-ui", "entrypoint": "python3 one_checkpoint.py", "max_restarts": 0,
              "searcher": {"name": "single", "metric": "loss", "max_length": 1},
              "checkpoint_storage": {"type": "shared_fs", "host_path": str(tmp_path / "ckpts")}}
    with c.client() as client:
        created = client.create_experiment(yaml.safe_dump(config), _context()).experiment
        assert created is not None
        c.wait_for(lambda: client.get_experiment(created.id).experiment.state.terminal, timeout=120,
                   what="the experiment to end")
        detail = client.get_experiment(created.id)
        assert detail.experiment.state.value == "COMPLETED", c.log("master.log")[-3000:]
        (ckpt,) = client.experiment_checkpoints(created.id).checkpoints
        return created.id, detail.trials[0].id, ckpt.uuid


def test_models_a_model_and_a_version_show_the_registry_with_links_to_where_it_came_from(ui_cluster, page,
                                                                                         tmp_path):
    c = ui_cluster
    exp_id, trial_id, ckpt = _checkpoint(c, tmp_path)
    name = f"digits-{uuid.uuid4().hex[:6]}"
    with c.client() as client:
        made = client.create_model(name, description=f"best digits {EVIL}", labels=["cnn", "prod"],
                                   metadata={"framework": "torch"}, notes="trained on MNIST")
        client.register_version(name, ckpt, name="first", comment="the only checkpoint")

    page.goto(c.url + "/")
    page.click("#models-link")
    page.wait_for_selector("#models")
    row = page.eval_on_selector(f'#models tr[data-key="{made.id}"]',
                                "tr => [...tr.querySelectorAll('td')].map(td => td.textContent.trim())")
    assert row[:5] == [name, f"best digits {EVIL}", "cnnprod", "Uncategorized", "1"]

    page.click(f'#models tr[data-key="{made.id}"] a.name')
    page.wait_for_selector("#versions")
    assert urlparse(page.url).path == f"/models/{name}"
    assert page.text_content("#model-name").strip() == name
    assert page.text_content("#model-description").strip() == f"best digits {EVIL}"
    assert page.text_content("#model-notes").strip() == "trained on MNIST"
    assert "framework" in page.text_content("#model-metadata") and '"torch"' in page.text_content("#model-metadata")
    links = page.eval_on_selector('#versions tr[data-key="1"]',
                                  "tr => [...tr.querySelectorAll('a')].map(a => a.getAttribute('href'))")
    assert links == [f"/models/{name}/versions/1", f"/experiments/{exp_id}", f"/trials/{trial_id}"]

    page.click('#versions tr[data-key="1"] a.name')
    page.wait_for_selector("#files")
    assert page.text_content("#version-title").strip() == f"{name} version 1"
    assert page.text_content("#checkpoint-uuid").strip() == ckpt
    assert page.text_content("#checkpoint-state").strip() == "COMPLETED"
    assert page.get_attribute("#experiment-link", "href") == f"/experiments/{exp_id}"
    assert page.get_attribute("#trial-link", "href") == f"/trials/{trial_id}"
    assert page.get_attribute("#checkpoint-link", "href") == f"/api/v1/checkpoints/{ckpt}/download"
    assert "model.txt" in page.text_content("#files")
    assert page.evaluate("() => window.pwned === undefined && !document.querySelector('img[src=x]')")
    download = page.request.get(c.url + f"/api/v1/checkpoints/{ckpt}/download")
    assert download.status == 200 and download.body()[:2] == b"\x1f\x8b"  # the checkpoint's .tgz
    page.click("#trial-link")
    page.wait_for_selector("#main")
    assert urlparse(page.url).path == f"/trials/{trial_id}"

    # a name or version that is not there: a 404 page, not an error of the master
    assert page.goto(f"{c.url}/models/{name}/versions/7").status == 404
    assert page.goto(f"{c.url}/models/no-such-{name}").status == 404
