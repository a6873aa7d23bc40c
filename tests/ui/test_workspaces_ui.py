"""Workspaces and projects in the web UI, in Chromium (issue 20), on a master with roles (`authz.type: rbac`):
a user navigates workspaces → a workspace → a project → an experiment, sees only the workspaces a role gives
them, finds the controls of an experiment disabled where their role only lets them read (and the master
refusing the call anyway), and kills an experiment where their role lets them change it."""

from __future__ import annotations

import base64
import uuid
from urllib.parse import urlparse

import pytest
import yaml

from conftest import UICluster
from stalwart.context import pack_context

pytestmark = pytest.mark.integration

PASSWORD = "correct horse battery staple"
RBAC = "security:\n  authz:\n    type: rbac\n"
EVIL = "<img src=x onerror=window.pwned=1>"  # names are shown as text, never run as HTML


@pytest.fixture(scope="module")
def rbac_cluster(tmp_path_factory, ui_db):
    """A master with roles (no agent: the experiments here never run)."""
    with UICluster(tmp_path_factory.mktemp("ws-ui") / "home", ui_db, agents=0, master_config=RBAC) as c:
        yield c


def _experiment(client, tmp_path, name: str, workspace: str, project: str) -> int:
    """A paused experiment (it never runs) in `workspace`/`project`, created through `client`; its id."""
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('never runs')\n")
    cfg = {"name": name, "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1},
           "workspace": workspace, "project": project,
           "searcher": {"name": "single", "metric": "acc", "smaller_is_better": False, "max_length": {"batches": 10}}}
    created = client.create_experiment(yaml.safe_dump(cfg), base64.b64encode(pack_context(ctx).data).decode(),
                                       activate=False)
    assert created.experiment is not None
    return created.experiment.id


def _rows(page, table: str) -> dict[str, str]:
    """{link text: link href} of the first link in each row of the table with id `table`."""
    return dict(page.eval_on_selector_all(f"#{table} tbody tr a.name",
                                          "as => as.map(a => [a.textContent.trim(), a.getAttribute('href')])"))


def test_a_user_sees_their_workspaces_and_may_change_only_where_their_role_allows(rbac_cluster, new_page, tmp_path):
    c = rbac_cluster
    tag = uuid.uuid4().hex[:6]
    admin = c.client()
    w1, w2 = admin.create_workspace(f"team-a-{tag}"), admin.create_workspace(f"team-b-{tag}")
    p1 = admin.create_project(w1.id, "baselines", description="the first tries")
    p2 = admin.create_project(w2.id, f"sweeps {EVIL}", description=EVIL)
    hidden = admin.create_workspace(f"hidden-{tag}")  # A has no role here: not shown to A
    user = f"ann-{tag}"
    admin.create_user(user, password=PASSWORD)
    admin.assign_role("Editor", username=user, workspace_id=w1.id)
    admin.assign_role("Viewer", username=user, workspace_id=w2.id)
    # both experiments are the admin's: what A may do to them comes from A's roles, not from owning them
    e1 = _experiment(admin, tmp_path, f"exp-a-{tag}", w1.name, p1.name)
    e2 = _experiment(admin, tmp_path, f"exp-b-{tag}", w2.name, p2.name)

    page = new_page(c, user, PASSWORD)
    _workspaces_list_shows_theirs(c, page, w1, w2)
    _read_only_where_a_viewer(c, page, admin, w2, p2, e2)
    # a workspace A has no role in is not there for A
    assert page.goto(f"{c.url}/workspaces/{hidden.id}").status in (403, 404)
    _kills_where_an_editor(c, page, admin, w1, p1, e1)

    # the experiments list names each experiment's workspace and project, and shows A only those two
    page.goto(c.url + "/")
    page.wait_for_selector(f'#experiments tr[data-key="{e1}"]')
    places = page.eval_on_selector_all("#experiments tbody tr", "trs => Object.fromEntries(trs.map(tr => "
                                       "[tr.dataset.key, tr.querySelector('.place').textContent]))")
    assert places == {str(e1): f"{w1.name} / {p1.name}", str(e2): f"{w2.name} / {p2.name}"}


def _workspaces_list_shows_theirs(c, page, w1, w2) -> None:
    """The workspaces page lists the two workspaces A has a role in, with their counts."""
    page.goto(c.url + "/")
    page.click("#workspaces-link")
    page.wait_for_selector("#workspaces")
    assert urlparse(page.url).path == "/workspaces"
    assert _rows(page, "workspaces") == {w1.name: f"/workspaces/{w1.id}", w2.name: f"/workspaces/{w2.id}"}
    counts = page.eval_on_selector(f'#workspaces tr[data-key="{w2.id}"]',
                                   "tr => [...tr.querySelectorAll('td')].map(td => td.textContent.trim())")
    assert counts[:4] == [w2.name, "2", "1", "no"]  # name, projects (its own Uncategorized too), experiments, archived


def _read_only_where_a_viewer(c, page, admin, w2, p2, e2: int) -> None:
    """W2 (Viewer) → its project → its experiment: read only; the master refuses a kill anyway."""
    page.click(f"#workspaces a[href='/workspaces/{w2.id}']")
    page.wait_for_selector("#projects")
    assert page.text_content("#workspace-name").strip() == w2.name
    projects = _rows(page, "projects")
    assert sorted(projects) == sorted(["Uncategorized", p2.name]) and projects[p2.name] == f"/projects/{p2.id}"
    page.click(f"#projects a[href='/projects/{p2.id}']")
    page.wait_for_selector(f'#experiments tr[data-key="{e2}"]')
    assert page.text_content("#project-name").strip() == p2.name
    assert page.text_content("#project-description").strip() == EVIL
    assert page.text_content("#workspace-link").strip() == w2.name
    assert page.locator("#experiments tbody tr").count() == 1  # only this project's experiment
    page.click(f'#experiments tr[data-key="{e2}"] a.name')
    page.wait_for_selector("#actions-note:not([hidden])")
    assert urlparse(page.url).path == f"/experiments/{e2}"
    assert page.text_content('dd[data-fact="Workspace"]').strip() == w2.name
    assert page.text_content('dd[data-fact="Project"]').strip() == p2.name
    assert page.evaluate("() => window.pwned === undefined && !document.querySelector('img[src=x]')")
    assert "edit_experiments" in page.text_content("#actions-note")
    assert page.is_disabled("#actions button[data-action=kill]")
    assert page.is_disabled("#actions button[data-action=pause]")
    assert page.is_disabled("#actions button[data-action=activate]")
    # the master refuses it anyway, naming the permission
    csrf = {ck["name"]: ck["value"] for ck in page.context.cookies()}["stalwart_csrf"]
    refused = page.request.post(f"{c.url}/api/v1/experiments/{e2}/kill", headers={"X-CSRF-Token": csrf})
    assert refused.status == 403 and "lacks edit_experiments" in refused.text(), refused.text()
    assert admin.get_experiment(e2).experiment.state == "PAUSED"


def _kills_where_an_editor(c, page, admin, w1, p1, e1: int) -> None:
    """W1 (Editor) → its project → its experiment: the controls work, and A kills it from the page."""
    page.goto(c.url + "/workspaces")
    page.click(f"#workspaces a[href='/workspaces/{w1.id}']")
    page.click(f"#projects a[href='/projects/{p1.id}']")
    page.click(f'#experiments tr[data-key="{e1}"] a.name')
    page.wait_for_selector("#actions button[data-action=kill]:not([disabled])")
    assert page.is_hidden("#actions-note")
    assert page.is_enabled("#actions button[data-action=activate]")
    page.click("#actions button[data-action=kill]")
    page.click("#actions button[data-action=kill]")  # the second click confirms
    page.wait_for_function("() => document.querySelector('#flash').textContent.includes('kill: done')")
    c.wait_for(lambda: admin.get_experiment(e1).experiment.state in ("STOPPING_CANCELED", "CANCELED"),
               what="the experiment in W1 killed")
