"""A template merged under a task's config (config/templates.py over config/merge.py): Determined's rules, one by
one, and the template's name and config checks."""

from __future__ import annotations

import pytest
import yaml

from stalwart.api.errors import ConfigError, InvalidRequest
from stalwart.config.templates import check_name, expand, expand_text, read_template


def test_the_configs_scalars_win_and_maps_merge_key_by_key() -> None:
    template = {"description": "from the template", "resources": {"slots_per_trial": 2, "priority": 10},
                "max_restarts": 3}
    mine = {"description": "mine", "resources": {"priority": 5}}
    assert expand(mine, template) == {"description": "mine", "resources": {"priority": 5, "slots_per_trial": 2},
                                      "max_restarts": 3}


def test_neither_input_is_changed() -> None:
    template = {"resources": {"slots_per_trial": 2}}
    mine = {"resources": {"priority": 5}}
    expand(mine, template)
    assert template == {"resources": {"slots_per_trial": 2}} and mine == {"resources": {"priority": 5}}


def test_a_non_empty_list_of_the_config_replaces_the_templates() -> None:
    template = {"labels": ["a", "b"], "entrypoint": ["python3", "t.py"]}
    assert expand({"labels": ["c"]}, template)["labels"] == ["c"]
    assert expand({"labels": []}, template)["labels"] == ["a", "b"]  # an empty one takes the template's
    assert expand({}, template)["entrypoint"] == ["python3", "t.py"]


def test_bind_mounts_and_devices_append_the_templates_whose_container_path_is_unused() -> None:
    template = {"bind_mounts": [{"host_path": "/data", "container_path": "/data"},
                                {"host_path": "/cache", "container_path": "/cache"}],
                "resources": {"devices": [{"host_path": "/dev/a", "container_path": "/dev/a"}]}}
    mine = {"bind_mounts": [{"host_path": "/mine", "container_path": "/data"}],
            "resources": {"devices": [{"host_path": "/dev/b", "container_path": "/dev/b"}]}}
    merged = expand(mine, template)
    assert merged["bind_mounts"] == [{"host_path": "/mine", "container_path": "/data"},
                                     {"host_path": "/cache", "container_path": "/cache"}]
    assert [d["container_path"] for d in merged["resources"]["devices"]] == ["/dev/b", "/dev/a"]


def test_environment_variables_concatenate_the_templates_first() -> None:
    template = {"environment": {"environment_variables": ["A=1", "B=1"], "image": "img:t"}}
    mine = {"environment": {"environment_variables": ["B=2"]}}
    merged = expand(mine, template)["environment"]
    assert merged == {"environment_variables": ["A=1", "B=1", "B=2"], "image": "img:t"}
    by_kind = expand({"environment": {"environment_variables": {"cpu": ["C=1"]}}},
                     {"environment": {"environment_variables": ["A=1"]}})["environment"]["environment_variables"]
    assert by_kind["cpu"] == ["A=1", "C=1"] and by_kind["cuda"] == ["A=1"]


def test_log_policies_merge_by_name() -> None:
    template = {"log_policies": [{"name": "oom", "pattern": "OOM", "action": "cancel_retries"},
                                 {"name": "nan", "pattern": "nan"}]}
    mine = {"log_policies": [{"name": "oom", "pattern": "out of memory"}]}
    assert expand(mine, template)["log_policies"] == [{"name": "nan", "pattern": "nan"},
                                                      {"name": "oom", "pattern": "out of memory"}]


def test_pod_spec_merges_strategically_by_container_name() -> None:
    template = {"environment": {"pod_spec": {"metadata": {"labels": {"team": "t"}}, "spec": {
        "containers": [{"name": "determined-container", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
        "volumes": [{"name": "v", "emptyDir": {}}], "tolerations": [{"key": "a"}]}}}}
    mine = {"environment": {"pod_spec": {"metadata": {"labels": {"mine": "m"}}, "spec": {
        "containers": [{"name": "determined-container", "env": [{"name": "X", "value": "1"}]},
                       {"name": "sidecar", "image": "s"}],
        "tolerations": [{"key": "b"}]}}}}
    pod = expand(mine, template)["environment"]["pod_spec"]
    assert pod["metadata"]["labels"] == {"team": "t", "mine": "m"}
    assert pod["spec"]["containers"] == [
        {"name": "determined-container", "volumeMounts": [{"name": "v", "mountPath": "/v"}],
         "env": [{"name": "X", "value": "1"}]},
        {"name": "sidecar", "image": "s"}]
    assert pod["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]
    assert pod["spec"]["tolerations"] == [{"key": "b"}]  # no merge key: the config's list


def test_a_union_merges_its_variant_only_when_both_name_the_same_one() -> None:
    s3 = {"checkpoint_storage": {"type": "s3", "bucket": "b", "access_key": "k", "secret_key": "s",
                                 "save_trial_best": 3}}
    same = expand({"checkpoint_storage": {"type": "s3", "prefix": "p"}}, s3)["checkpoint_storage"]
    assert same == {"type": "s3", "prefix": "p", "bucket": "b", "access_key": "k", "secret_key": "s",
                    "save_trial_best": 3}
    other = expand({"checkpoint_storage": {"type": "shared_fs", "host_path": "/c"}}, s3)["checkpoint_storage"]
    assert other == {"type": "shared_fs", "host_path": "/c", "save_trial_best": 3}  # only the shared field
    searcher = expand({"searcher": {"name": "random", "max_trials": 4}},
                      {"searcher": {"name": "grid", "metric": "loss", "max_length": {"batches": 9}}})["searcher"]
    assert searcher == {"name": "random", "max_trials": 4, "metric": "loss"}


def test_a_hyperparameter_merges_only_with_one_of_the_same_type() -> None:
    template = {"hyperparameters": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0},
                                    "layers": {"type": "int", "minval": 1, "maxval": 4}, "batch": 32}}
    mine = {"hyperparameters": {"lr": {"type": "double", "maxval": 0.5},
                                "layers": {"type": "categorical", "vals": [2, 3]}}}
    merged = expand(mine, template)["hyperparameters"]
    assert merged["lr"] == {"type": "double", "maxval": 0.5, "minval": 0.0}
    assert merged["layers"] == {"type": "categorical", "vals": [2, 3]}
    assert merged["batch"] == 32


def test_expand_text_gives_the_merged_config_as_yaml() -> None:
    text = "name: mine  # a comment\nentrypoint: python3 train.py\n"
    merged = yaml.safe_load(expand_text(text, {"name": "t", "max_restarts": 0}))
    assert merged == {"name": "mine", "entrypoint": "python3 train.py", "max_restarts": 0}


@pytest.mark.parametrize("given", ["- a\n- b\n", "just text", ""])
def test_a_template_config_must_be_a_mapping(given: str) -> None:
    with pytest.raises(ConfigError, match="template config must be a mapping"):
        read_template(given)


def test_a_template_cannot_name_another_template() -> None:
    with pytest.raises(ConfigError, match="cannot name another template"):
        read_template({"template": "other"})


@pytest.mark.parametrize("name", ["", "a/b", "-x", "a b", "x" * 257])
def test_a_bad_template_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidRequest, match="is not valid"):
        check_name(name)
    assert check_name("gpu-defaults.v2") == "gpu-defaults.v2"


def test_a_task_takes_only_the_template_keys_its_kind_has() -> None:
    template = {"searcher": {"name": "single"}, "max_restarts": 3, "environment": {"image": "img"}}
    assert expand({"entrypoint": ["true"]}, template, keys={"entrypoint", "environment"}) == {
        "entrypoint": ["true"], "environment": {"image": "img"}}
