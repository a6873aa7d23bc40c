"""Determined's own example configs (reference §8, data-download lines aside) and every top-level key parse."""

from __future__ import annotations

import pytest

from stalwart.config import load_experiment_config

STORAGE = {"checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/ckpt"}}
MNIST_HP = "hyperparameters: {learning_rate: 1.0, n_filters1: 32, n_filters2: 64, dropout1: 0.25, dropout2: 0.5}\n"
MNIST_SPACE = """hyperparameters:
  learning_rate: {type: double, minval: .0001, maxval: 1.0}
  n_filters1: {type: int, minval: 8, maxval: 64}
  n_filters2: {type: int, minval: 8, maxval: 72}
  dropout1: {type: double, minval: .2, maxval: .8}
  dropout2: {type: double, minval: .2, maxval: .8}
"""

EXAMPLES = {
    "mnist_pytorch/const": "name: mnist_pytorch_const\n" + MNIST_HP
    + "searcher: {name: single, metric: validation_loss, smaller_is_better: true}\n"
      "entrypoint: python3 train.py --epochs 1\n",
    "mnist_pytorch/adaptive": "name: mnist_pytorch_adaptive_search\n" + MNIST_SPACE
    + "searcher: {name: adaptive_asha, metric: validation_loss, smaller_is_better: true, max_trials: 16,"
      " time_metric: batches, max_time: 937}\nentrypoint: python3 train.py --epochs 1\n",
    "mnist_pytorch/distributed": "name: mnist_pytorch_distributed\n" + MNIST_HP
    + "searcher: {name: single, metric: validation_loss, smaller_is_better: true}\n"
      "resources: {slots_per_trial: 8}\n"
      "entrypoint: python3 -m determined.launch.torch_distributed python3 train.py --epochs 1\n",
    "mnist_pytorch/dist_random": "name: mnist_pytorch_dist_random\n" + MNIST_SPACE
    + "searcher: {name: random, metric: accuracy, smaller_is_better: false, max_trials: 2}\n"
      "resources: {slots_per_trial: 1}\n"
      "entrypoint: python3 -m determined.launch.torch_distributed python3 train.py --epochs 1\n",
    "core_api/0_start": "name: core-api-stage-0\nentrypoint: python3 0_start.py\n"
    "searcher: {name: single, metric: x, max_length: 1}\nmax_restarts: 0\n",
    "core_api/3_hpsearch": "name: core-api-stage-3\nentrypoint: python3 3_hpsearch.py\n"
    "hyperparameters: {increment_by: {type: int, minval: 1, maxval: 8}}\n"
    "searcher: {name: adaptive_asha, metric: x, smaller_is_better: true, max_trials: 10,"
    " time_metric: batches, max_time: 100}\nmax_restarts: 0\n",
    "core_api/4_distributed": "name: core-api-stage-4\nentrypoint: python3 4_distributed.py launcher\n"
    "hyperparameters: {increment_by: 1}\nresources: {slots_per_trial: 8}\n"
    "searcher: {name: single, metric: x, max_length: 100}\nmax_restarts: 0\n",
    "core_api_pytorch_mnist/adaptive": "name: core-api-pytorch-mnist-adaptive\n" + MNIST_SPACE
    + "searcher: {name: adaptive_asha, metric: test_loss, smaller_is_better: true, max_trials: 50,"
      " time_metric: epochs, max_time: 20}\nentrypoint: python3 adaptive.py\n",
    "core_api_pytorch_mnist/distributed": "name: core-api-pytorch-mnist-distributed\n" + MNIST_HP
    + "resources: {slots_per_trial: 4}\nsearcher: {name: single, metric: test_loss, max_length: 1}\n"
      "entrypoint: python3 -m determined.launch.torch_distributed python3 distributed.py\n",
    "iris_tf_keras/distributed": "name: iris_tf_keras_distributed\n"
    "environment: {image: determinedai/tensorflow-ngc-dev:0736b6d}\n"
    "hyperparameters: {learning_rate: 1.0e-4, learning_rate_decay: 1.0e-6, layer1_dense_size: 16,"
    " global_batch_size: 32}\nresources: {slots_per_trial: 2}\n"
    "searcher: {name: single, metric: val_categorical_accuracy, smaller_is_better: false}\n"
    "entrypoint: python3 -m determined.launch.tensorflow -- python3 train.py\n",
    "deepspeed/dcgan": "name: dcgan_deepspeed_mnist\n"
    "bind_mounts: [{host_path: /tmp, container_path: /tmp/data, read_only: true}]\n"
    "hyperparameters: {deepspeed_config: ds_config.json, noise_length: 100, generator_width_base: 64,"
    " discriminator_width_base: 64, data_dir: /tmp/data, dataset: mnist}\n"
    "resources: {slots_per_trial: 2}\nmin_validation_period: {batches: 50}\n"
    "searcher: {name: single, metric: no_validation_metric, max_length: {batches: 200}}\n"
    "entrypoint: python3 -m determined.launch.deepspeed --trial model_def:DCGANTrial\n",
    "gpt_neox/hp_search": "name: gpt-neox-hp-search\n"
    "environment: {image: {gpu: determinedai/gpt-neox:latest}, force_pull_image: true}\n"
    "resources: {slots_per_trial: 16}\n"
    "hyperparameters: {conf_dir: /gpt-neox/configs, conf_file: [small.yml],"
    " overwrite_values: {train_batch_size: {type: categorical, vals: [32, 64]}}}\n"
    "searcher: {name: grid, metric: lm_loss, smaller_is_better: true, max_length: {batches: 100}}\n"
    "min_validation_period: {batches: 50}\n"
    "entrypoint: python3 -m determined.launch.deepspeed --trial gpt2_trial:GPT2Trial\n",
    "hf_image_classification/adaptive": "name: hf-image-classification-adaptive\n"
    "hyperparameters: {training_arguments: {learning_rate: {type: log, base: 10, minval: -5, maxval: -3},"
    " per_device_train_batch_size: 8}}\nresources: {slots_per_trial: 1}\n"
    "searcher: {name: adaptive_asha, metric: eval_accuracy, smaller_is_better: false, max_trials: 64,"
    " time_metric: batches, max_time: 100}\nentrypoint: python3 image_classification.py\n",
    "diffusion/generate_grid": "name: detsd-generate-grid\n"
    "hyperparameters: {guidance_scale: {type: categorical, vals: [1, 3, 7]},"
    " num_inference_steps: {type: int, minval: 20, maxval: 50, count: 3}}\n"
    "environment: {environment_variables: [HF_AUTH_TOKEN=x]}\n"
    "searcher: {name: grid, metric: none, max_length: 1}\n"
    "entrypoint: python3 -m determined.launch.torch_distributed python3 generate.py\n",
    "inference_mnist_pytorch/distributed_inference": "name: distributed-inference\n"
    "hyperparameters: {model_name: mnist, model_version: {type: categorical, vals: [1, 2]}}\n"
    "resources: {slots_per_trial: 2}\n"
    "searcher: {name: grid, metric: x, max_length: 100}\n"
    "entrypoint: python3 -m determined.launch.torch_distributed python3 inference.py\n",
    "ports/ray_launcher": "name: ray-launcher\n"
    "environment: {proxy_ports: [{proxy_port: 8265, proxy_tcp: true}, {proxy_port: 10001}]}\n"
    "resources: {slots_per_trial: 2}\nsearcher: {name: single, metric: x, max_length: 1}\n"
    "entrypoint: python3 launcher.py\n",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_reference_example_configs_validate(name):
    expanded = load_experiment_config(EXAMPLES[name], master_defaults=STORAGE)
    assert expanded.config["searcher"]["metric"]
    assert expanded.config["checkpoint_storage"]["host_path"] == "/tmp/ckpt"


TOP_LEVEL_VALUES = {
    "name": "n", "description": "d", "labels": ["a"], "data": {"url": "x", "secrets": {"k": "v"}},
    "workspace": "w", "project": "p", "entrypoint": ["python3", "t.py"],
    "hyperparameters": {"lr": {"type": "const", "val": 0.1}, "model": {"width": 8, "act": "relu"}},
    "searcher": {"name": "random", "metric": "m", "max_trials": 3},
    "resources": {"slots_per_trial": 2, "max_slots": 4, "weight": 2.0, "priority": 7, "resource_pool": "gpu",
                  "shm_size": "1.5G"},
    "environment": {"environment_variables": {"cpu": ["A=1"], "cuda": ["B=2"]}, "ports": {"web": 8080}},
    "bind_mounts": [{"host_path": "/data", "container_path": "data"}],
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp", "save_trial_best": 2},
    "checkpoint_policy": "all", "max_restarts": 0, "min_validation_period": {"epochs": 1},
    "min_checkpoint_period": {"records": 640}, "perform_initial_validation": True, "scheduling_unit": 10,
    "records_per_epoch": 6400, "optimizations": {"aggregation_frequency": 2, "mixed_precision": "O1"},
    "reproducibility": {"experiment_seed": 42}, "profiling": {"enabled": True, "begin_on_batch": 1,
                                                              "end_after_batch": 5},
    "log_policies": [{"name": "OOM", "pattern": ".*OOM.*", "action": "cancel_retries"}],
    "retention_policy": {"log_retention_days": 7}, "debug": True, "preemption_timeout": 60,
    "tensorboard_storage": {"type": "shared_fs", "host_path": "/tmp"},
    "integrations": {"pachyderm": {"pachd": {"host": "h", "port": 1}}},
    "security": {"kerberos": {"config_file": "/etc/krb5.conf"}},
    "slurm": {"slots_per_node": 4, "gpu_type": "a100", "sbatch_args": ["--time=1:00:00"]},
    "pbs": {"slots_per_node": 4, "pbsbatch_args": ["-l walltime=1:00:00"]},
    "data_layer": {"type": "shared_fs"}, "internal": None,
}


@pytest.mark.parametrize("key", sorted(TOP_LEVEL_VALUES))
def test_every_top_level_key_parses_with_a_real_value(key):
    base = {"entrypoint": "python3 t.py", "searcher": {"name": "single", "metric": "m", "max_length": 1},
            **STORAGE}
    base[key] = TOP_LEVEL_VALUES[key]
    if key == "workspace":
        base["project"] = "p"
    if key == "project":
        base["workspace"] = "w"
    expanded = load_experiment_config(base).config
    assert key in expanded
    if TOP_LEVEL_VALUES[key] is not None and key not in ("hyperparameters", "bind_mounts", "environment",
                                                        "log_policies", "resources", "searcher"):
        want = TOP_LEVEL_VALUES[key]
        got = expanded[key]
        if isinstance(want, dict):
            assert {k: got[k] for k in want} == want
        else:
            assert got == want


def test_the_table_covers_every_top_level_key():
    from stalwart.config.experiment import load_experiment_config as load

    keys = set(load({"entrypoint": "x", "searcher": {"name": "single", "metric": "m"}, **STORAGE}).config)
    assert keys == set(TOP_LEVEL_VALUES)
