"""The Kubernetes API test double's pure helpers: quantities, label and field selectors, name checks, and the
scheduler's placement and messages, as the real API server and kube-scheduler spell them."""

from __future__ import annotations

import pytest

from stalwart.testing.k8s_api_double.objects import ApiError, LabelSelector, Selector, name_problems, parse_quantity
from stalwart.testing.k8s_api_double.scheduler import NodeSpec, Placement, pod_requests
from stalwart.testing.k8s_api_double.store import ObjectStore


@pytest.mark.parametrize(
    ("text", "value"), [("500m", 0.5), ("2", 2.0), (3, 3.0), ("1Gi", 2.0**30), ("1.5k", 1500.0), ("250Mi", 250 * 2**20)]
)
def test_quantities(text, value) -> None:
    assert parse_quantity(text) == value


def test_a_bad_quantity_says_so() -> None:
    with pytest.raises(ValueError, match="quantities must match"):
        parse_quantity("lots")


@pytest.mark.parametrize(
    ("selector", "matching"),
    [
        ("app=web", True),
        ("app==web,tier=db", False),
        ("app!=db", True),
        ("tier in (db, cache)", False),
        ("app in (web,api),env notin (prod)", True),
        ("app", True),
        ("!app", False),
        ("!tier", True),
        ("", True),
    ],
)
def test_label_selectors(selector, matching) -> None:
    assert LabelSelector(selector).matches({"app": "web", "env": "dev"}) is matching


def test_field_selectors_know_a_few_fields_and_refuse_others() -> None:
    pod = {"metadata": {"name": "p", "namespace": "n"}, "spec": {"nodeName": "a"}, "status": {"phase": "Running"}}
    assert Selector(fields="metadata.name=p,status.phase!=Failed").matches(pod)
    assert not Selector(fields="spec.nodeName=b").matches(pod)
    with pytest.raises(ApiError) as unknown:
        Selector(fields="spec.schedulerName=x")
    assert unknown.value.code == 400


def test_names_must_be_dns_subdomains_of_at_most_63_characters() -> None:
    assert name_problems("trial-1.a") == []
    assert any("must be no more than 63 characters" in problem for problem in name_problems("x" * 64))
    assert name_problems("Trial_1")
    assert name_problems("") == ["metadata.name: Required value: name or generateName is required"]


def pod(cpu: str = "1", gpus: int = 0, **spec) -> dict:
    resources = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"nvidia.com/gpu": gpus} if gpus else {}}
    return {"spec": {"containers": [{"name": "c", "resources": resources}], **spec}}


def test_requests_take_limits_where_missing() -> None:
    assert pod_requests(pod(cpu="250m", gpus=2)) == {"cpu": 0.25, "memory": 2.0**30, "nvidia.com/gpu": 2.0}


def test_placement_fills_the_first_node_that_fits_and_explains_a_miss() -> None:
    nodes = [NodeSpec("a", cpu=2), NodeSpec("b", cpu=2, gpus=1, taints=[{"key": "gpu", "effect": "NoSchedule"}])]
    busy = {**pod(cpu="2"), "spec": {**pod(cpu="2")["spec"], "nodeName": "a"}}
    placement = Placement(nodes, [busy])

    node, message = placement.choose(pod(cpu="1"))
    assert node is None
    assert message.startswith("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {gpu}.")
    tolerating = pod(cpu="1", gpus=1, tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert placement.choose(tolerating) == ("b", "")


def test_a_full_history_forgets_its_oldest_events_and_refuses_watches_from_before_them() -> None:
    store = ObjectStore(history_limit=3)
    start = store.revision
    for index in range(5):
        store.create("secrets", "n", {"metadata": {"name": f"s{index}"}})

    with pytest.raises(ApiError) as gone:
        store.events_after(start, "secrets", "n")
    assert (gone.value.code, gone.value.reason) == (410, "Expired")
    events, revision = store.events_after(revision_of(store, "s1"), "secrets", "n")
    assert [e.object["metadata"]["name"] for e in events] == ["s2", "s3", "s4"] and revision == store.revision


def revision_of(store: ObjectStore, name: str) -> int:
    return int(store.get("secrets", "n", name)["metadata"]["resourceVersion"])
