"""Top-level loading: defaults, YAML errors, unknown keys, collected problems, warnings."""

from __future__ import annotations

import json

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import load_experiment_config, resolve_const_hparams

MNIST_CONST = """\
name: mnist_pytorch_const
data:
  url: https://s3-us-west-2.amazonaws.com/determined-ai-test-data/pytorch_mnist.tar.gz
hyperparameters:
  learning_rate: 1.0
  global_batch_size: 64
  n_filters1: 32
  n_filters2: 64
  dropout1: 0.25
  dropout2: 0.5
searcher:
  name: single
  metric: validation_loss
  max_length:
    batches: 937 # 60,000 training images with batch size 64
  smaller_is_better: true
entrypoint: model_def:MNistTrial
"""

ALL_TOP_LEVEL_KEYS = [
    "name", "description", "labels", "data", "workspace", "project", "entrypoint",
    "hyperparameters", "searcher", "resources", "environment", "bind_mounts",
    "checkpoint_storage", "checkpoint_policy", "max_restarts", "min_validation_period",
    "min_checkpoint_period", "perform_initial_validation", "scheduling_unit",
    "records_per_epoch", "optimizations", "reproducibility", "profiling", "log_policies",
    "retention_policy", "debug", "preemption_timeout", "tensorboard_storage", "integrations",
    "security", "slurm", "pbs", "data_layer", "internal",
]  # fmt: skip


# What a minimal config's sections expand to
DEFAULT_SEARCHER = {
    "name": "single",
    "metric": "loss",
    "smaller_is_better": True,
    "source_trial_id": None,
    "source_checkpoint_uuid": None,
    "max_length": None,
    "time_metric": None,
    "max_time": None,
}
DEFAULT_RESOURCES = {
    "slots_per_trial": 1,
    "max_slots": None,
    "weight": 1,
    "priority": None,
    "resource_pool": "",
    "shm_size": None,
    "devices": [],
    "is_single_node": None,
    "agent_label": None,
    "native_parallel": False,
}
DEFAULT_OPTIMIZATIONS = {
    "aggregation_frequency": 1,
    "average_aggregated_gradients": True,
    "average_training_metrics": True,
    "gradient_compression": False,
    "mixed_precision": "O0",
    "tensor_fusion_threshold": 64,
    "tensor_fusion_cycle_time": 1,
    "auto_tune_tensor_fusion": False,
    "grad_updates_size_file": None,
}
DEFAULT_PROFILING = {
    "enabled": False,
    "begin_on_batch": 0,
    "end_after_batch": None,
    "sync_timings": True,
}


def test_minimal_config_gets_every_key_with_defaults(minimal, expand):
    cfg = expand(minimal)
    assert list(cfg) == ALL_TOP_LEVEL_KEYS
    assert cfg["name"] is None
    assert cfg["description"] is None
    assert cfg["labels"] == []
    assert cfg["data"] == {}
    assert (cfg["workspace"], cfg["project"]) == ("", "")
    assert cfg["hyperparameters"] == {}
    assert cfg["checkpoint_policy"] == "best"
    assert cfg["max_restarts"] == 5
    assert cfg["min_validation_period"] == {"batches": 0}
    assert cfg["min_checkpoint_period"] == {"batches": 0}
    assert cfg["perform_initial_validation"] is False
    assert cfg["scheduling_unit"] == 100
    assert cfg["records_per_epoch"] == 0
    assert cfg["debug"] is False
    assert cfg["preemption_timeout"] == 3600
    assert cfg["bind_mounts"] == []
    assert cfg["retention_policy"] is None
    assert cfg["slurm"] == {"slots_per_node": None, "gpu_type": None, "sbatch_args": []}
    assert cfg["pbs"] == {"slots_per_node": None, "pbsbatch_args": []}
    assert cfg["searcher"] == DEFAULT_SEARCHER
    assert cfg["resources"] == DEFAULT_RESOURCES
    assert cfg["optimizations"] == DEFAULT_OPTIMIZATIONS
    assert cfg["profiling"] == DEFAULT_PROFILING
    assert [p["name"] for p in cfg["log_policies"]] == ["CUDA OOM", "ECC Error"]
    json.dumps(cfg)  # plain data only


def test_every_field_may_be_null(minimal, expand):
    minimal.update({key: None for key in ALL_TOP_LEVEL_KEYS if key not in minimal})
    minimal["resources"] = {"slots_per_trial": None, "priority": None}
    cfg = expand(minimal)
    assert cfg["max_restarts"] == 5
    assert cfg["resources"]["slots_per_trial"] == 1
    assert cfg["labels"] == []


def test_experiment_seed_is_generated_in_range(minimal, expand):
    seeds = {expand(minimal)["reproducibility"]["experiment_seed"] for _ in range(5)}
    assert all(0 <= s <= 2**31 - 1 for s in seeds)
    assert len(seeds) > 1


def test_experiment_seed_out_of_range(minimal, problems):
    minimal["reproducibility"] = {"experiment_seed": 2**31}
    assert problems(minimal) == [
        "reproducibility.experiment_seed: expected an integer in 0..2147483647, got 2147483648"
    ]


def test_given_seed_is_kept(minimal, expand):
    minimal["reproducibility"] = {"experiment_seed": 7}
    assert expand(minimal)["reproducibility"] == {"experiment_seed": 7}


def test_realistic_determined_config_is_accepted():
    result = load_experiment_config(
        MNIST_CONST, master_defaults={"checkpoint_storage": {"type": "shared_fs", "host_path": "/s"}}
    )
    cfg = result.config
    assert cfg["name"] == "mnist_pytorch_const"
    assert cfg["entrypoint"] == "model_def:MNistTrial"
    assert cfg["searcher"]["max_length"] == {"batches": 937}
    assert resolve_const_hparams(cfg["hyperparameters"])["n_filters1"] == 32
    assert result.warnings == []


def test_expanded_config_loads_again_unchanged(minimal, expand):
    minimal["hyperparameters"] = {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}}
    minimal["searcher"] = {"name": "random", "metric": "loss", "max_trials": 3}
    minimal["environment"] = {"environment_variables": ["A=1"]}
    first = expand(minimal)
    assert expand(first) == first


def test_malformed_yaml_names_line_and_column():
    text = "name: x\nsearcher:\n  name: single\n  metric: [loss\n"
    with pytest.raises(ConfigError) as info:
        load_experiment_config(text)
    assert "malformed YAML" in info.value.message
    assert "line 5, column 1" in info.value.message
    assert info.value.details[0].startswith("line 5, column 1: ")


def test_malformed_yaml_bad_indentation():
    with pytest.raises(ConfigError) as info:
        load_experiment_config("name: x\n  searcher: y\n")
    assert info.value.message.startswith("experiment config is malformed YAML at line 2, column 11")


@pytest.mark.parametrize(
    ("text", "what"),
    [("- a\n- b\n", "a list"), ("", "an empty document"), ("hello", "a plain string")],
)
def test_top_level_must_be_a_mapping(text, what):
    with pytest.raises(ConfigError) as info:
        load_experiment_config(text)
    assert info.value.message == f"experiment config must be a mapping of keys to values, got {what}"


def test_source_dict_is_not_modified(minimal, expand):
    before = json.dumps(minimal, sort_keys=True)
    expand(minimal)
    assert json.dumps(minimal, sort_keys=True) == before


def test_unknown_top_level_key_with_and_without_suggestion(minimal, problems):
    minimal["max_restart"] = 3
    minimal["flavour"] = "x"
    assert problems(minimal) == [
        "max_restart: unknown key; did you mean 'max_restarts'?",
        "flavour: unknown key",
    ]


def test_unknown_keys_inside_sections(minimal, problems):
    minimal["searcher"]["max_trails"] = 2
    minimal["resources"] = {"slots_per_trail": 2}
    minimal["optimizations"] = {"mixed_precison": "O1"}
    minimal["profiling"] = {"enable": True}
    minimal["reproducibility"] = {"seed": 1}
    minimal["environment"] = {"imgae": "x"}
    assert problems(minimal) == [
        "searcher.max_trails: unknown key; did you mean 'max_time'?",
        "resources.slots_per_trail: unknown key; did you mean 'slots_per_trial'?",
        "environment.imgae: unknown key; did you mean 'image'?",
        "optimizations.mixed_precison: unknown key; did you mean 'mixed_precision'?",
        "reproducibility.seed: unknown key",
        "profiling.enable: unknown key; did you mean 'enabled'?",
    ]


def test_unknown_key_suggestion_for_random_searcher(minimal, problems):
    minimal["searcher"] = {"name": "random", "metric": "loss", "max_trials": 2, "max_trails": 3}
    assert problems(minimal) == ["searcher.max_trails: unknown key; did you mean 'max_trials'?"]


def test_every_problem_is_collected(minimal, problems):
    minimal["searcher"] = {"name": "random"}
    minimal["resources"] = {"slots_per_trial": "two"}
    minimal["max_restarts"] = -1
    minimal["hyperparameters"] = {"lr": {"type": "double", "minval": 1.0, "maxval": 0.1}}
    with pytest.raises(ConfigError) as info:
        load_experiment_config(minimal)
    assert info.value.message == "invalid experiment config (5 problems)"
    assert info.value.details == [
        "hyperparameters.lr.minval: must be less than maxval (got 1.0 >= 0.1)",
        "searcher.metric: required",
        "searcher.max_trials: required",
        "resources.slots_per_trial: expected an integer >= 0, got 'two'",
        "max_restarts: expected an integer >= 0, got -1",
    ]


def test_single_problem_message(minimal):
    minimal["debug"] = "yes"
    with pytest.raises(ConfigError) as info:
        load_experiment_config(minimal)
    assert info.value.message == "invalid experiment config (1 problem)"
    assert info.value.details == ["debug: expected a boolean (true or false), got 'yes'"]


@pytest.mark.parametrize(
    ("key", "value", "detail"),
    [
        ("name", 5, "name: expected a string, got 5"),
        ("description", ["x"], "description: expected a string, got a list"),
        ("labels", "a", "labels: expected a list, got 'a'"),
        ("labels", ["a", 1], "labels[1]: expected a string, got 1"),
        ("data", [1], "data: expected a mapping, got a list"),
        ("checkpoint_policy", "some", "checkpoint_policy: expected one of best, all, none, got 'some'"),
        ("max_restarts", True, "max_restarts: expected an integer >= 0, got True"),
        ("max_restarts", 1.5, "max_restarts: expected an integer >= 0, got 1.5"),
        ("scheduling_unit", 0, "scheduling_unit: expected an integer >= 1, got 0"),
        ("records_per_epoch", -5, "records_per_epoch: expected an integer >= 0, got -5"),
        ("perform_initial_validation", 1, "perform_initial_validation: expected a boolean (true or false), got 1"),
        ("preemption_timeout", "1h", "preemption_timeout: expected an integer >= 0, got '1h'"),
        ("hyperparameters", [1], "hyperparameters: expected a mapping, got a list"),
        ("resources", 3, "resources: expected a mapping, got 3"),
        ("entrypoint", 5, "entrypoint: expected a command string or a non-empty list of strings, got 5"),
        ("entrypoint", ["python3", 1], "entrypoint[1]: expected a string, got 1"),
        ("retention_policy", {"log_retention_days": -2},
         "retention_policy.log_retention_days: expected an integer in -1..32767, got -2"),
        ("optimizations", {"mixed_precision": "O4"},
         "optimizations.mixed_precision: expected one of O0, O1, O2, O3, got 'O4'"),
        ("profiling", {"begin_on_batch": 10, "end_after_batch": 5},
         "profiling.end_after_batch: must be >= begin_on_batch (got 5 < 10)"),
        ("log_policies", [{"name": "x", "action": "explode"}],
         "log_policies[0].action: expected one of exclude_node, cancel_retries, got 'explode'"),
        ("security", {"kerberos": {"config_file": 1}}, "security.kerberos.config_file: expected a string, got 1"),
        ("slurm", {"sbatch_args": "x"}, "slurm.sbatch_args: expected a list, got 'x'"),
        ("integrations", {"pachyderm": 1}, "integrations.pachyderm: expected a mapping, got 1"),
        ("bind_mounts", [{"host_path": "rel", "container_path": "."}],
         "bind_mounts[0].host_path: must be an absolute path, got 'rel'"),
    ],
)  # fmt: skip
def test_wrong_types_are_named_by_path(minimal, problems, key, value, detail):
    minimal[key] = value
    assert problems(minimal)[0] == detail


def test_bind_mount_container_path_dot_rejected(minimal, problems):
    minimal["bind_mounts"] = [{"host_path": "/data", "container_path": "."}]
    assert problems(minimal) == [
        "bind_mounts[0].container_path: must name a directory other than the working directory, got '.'"
    ]


def test_entrypoint_required(minimal, problems):
    del minimal["entrypoint"]
    assert problems(minimal) == [
        "entrypoint: required (a script command such as 'python3 train.py' or a Trial class "
        "'model_def:MyTrial')"
    ]


def test_entrypoint_list_form(minimal, expand):
    minimal["entrypoint"] = ["python3", "-m", "train"]
    assert expand(minimal)["entrypoint"] == ["python3", "-m", "train"]


def test_searcher_required(minimal, problems):
    del minimal["searcher"]
    assert problems(minimal) == ["searcher: required"]


def test_workspace_and_project_go_together(minimal, problems, expand):
    minimal["workspace"] = "ws"
    assert problems(minimal) == ["project: required when workspace is set"]
    minimal["project"] = "p"
    assert (expand(minimal)["workspace"], expand(minimal)["project"]) == ("ws", "p")
    del minimal["workspace"]
    assert problems(minimal) == ["workspace: required when project is set"]


def test_log_policies_merge_by_name_and_legacy_forms(minimal, expand):
    minimal["log_policies"] = [
        {"name": "CUDA OOM", "pattern": ".*OOM.*", "action": {"type": "cancel_retries"}},
        {"pattern": ".*bad node.*", "signal": "Bad node", "action": "exclude_node"},
    ]
    assert expand(minimal)["log_policies"] == [
        {"name": "ECC Error", "pattern": ".*uncorrectable ECC error encountered.*", "action": None},
        {"name": "CUDA OOM", "pattern": ".*OOM.*", "action": "cancel_retries"},
        {"name": "Bad node", "pattern": ".*bad node.*", "action": "exclude_node"},
    ]


def test_warnings_for_no_effect_and_ignored_keys(minimal):
    minimal["optimizations"] = {"aggregation_frequency": 2}
    minimal["profiling"] = {"enabled": True}
    minimal["environment"] = {"image": "determinedai/pytorch-ngc-dev:0736b6d", "force_pull_image": False,
                              "pod_spec": {"spec": {"containers": []}}}
    minimal["bind_mounts"] = [{"host_path": "/data", "container_path": "/data"}]
    minimal["slurm"] = {"sbatch_args": ["--exclusive"]}
    result = load_experiment_config(minimal)
    # the container keys (image, bind_mounts, ...) are honoured by container agents: no warning; pod_spec is not
    assert result.warnings == [
        "profiling: has no effect in Stalwart; the setting is kept but ignored",
        "environment.pod_spec: ignored: Kubernetes only; Stalwart's agents run tasks as processes or in Docker or "
        "Podman containers",
        "slurm: ignored: Stalwart does not submit trials to Slurm",
    ]
    assert result.config["environment"]["image"] == {
        "cpu": "determinedai/pytorch-ngc-dev:0736b6d",
        "cuda": "determinedai/pytorch-ngc-dev:0736b6d",
        "rocm": "determinedai/pytorch-ngc-dev:0736b6d",
    }


def test_default_valued_sections_give_no_warning(minimal, expand):
    minimal["optimizations"] = {"mixed_precision": "O0"}
    minimal["profiling"] = {"enabled": False}
    minimal["environment"] = {"force_pull_image": False}
    assert load_experiment_config(minimal).warnings == []
    assert load_experiment_config(expand(minimal)).warnings == []


def test_master_defaults_merge_under_user_config(minimal, expand):
    del minimal["checkpoint_storage"]
    minimal["environment"] = {"environment_variables": ["B=2"]}
    master = {
        "checkpoint_storage": {"type": "s3", "bucket": "ckpts", "save_trial_best": 3},
        "max_restarts": 1,
        "environment": {"environment_variables": ["A=1"], "force_pull_image": True},
        "resources": {"resource_pool": "gpu-pool", "slots_per_trial": 4},
    }
    minimal["resources"] = {"slots_per_trial": 2}
    result = load_experiment_config(minimal, master_defaults=master)
    cfg = result.config
    assert cfg["checkpoint_storage"]["bucket"] == "ckpts"
    assert cfg["checkpoint_storage"]["save_trial_best"] == 3
    assert cfg["max_restarts"] == 1
    assert cfg["resources"]["slots_per_trial"] == 2
    assert cfg["resources"]["resource_pool"] == "gpu-pool"
    assert cfg["environment"]["environment_variables"]["cpu"] == ["A=1", "B=2"]
    assert result.warnings == []  # master settings are not the user's doing


def test_user_storage_of_another_type_replaces_master_default(minimal, expand):
    master = {"checkpoint_storage": {"type": "s3", "bucket": "b", "save_trial_latest": 5}}
    cfg = expand(minimal, master_defaults=master)
    assert cfg["checkpoint_storage"]["type"] == "shared_fs"
    assert "bucket" not in cfg["checkpoint_storage"]
    assert cfg["checkpoint_storage"]["save_trial_latest"] == 5


def test_checkpoint_storage_required_without_master_default(minimal, problems):
    del minimal["checkpoint_storage"]
    assert problems(minimal) == ["checkpoint_storage: required (the master has no default)"]
    assert problems(minimal, master_defaults={"max_restarts": 2}) == [
        "checkpoint_storage: required (the master has no default)"
    ]


def test_yaml_dates_become_strings(minimal, expand):
    minimal["data"] = {"since": __import__("datetime").date(2024, 1, 2), 3: "x"}
    assert expand(minimal)["data"] == {"since": "2024-01-02", "3": "x"}


def test_several_yaml_documents_are_rejected():
    with pytest.raises(ConfigError) as info:
        load_experiment_config("a: 1\n---\nb: 2\n")
    assert info.value.message == (
        "experiment config is malformed YAML at line 2, column 1: "
        "expected a single document in the stream, but found another document"
    )
