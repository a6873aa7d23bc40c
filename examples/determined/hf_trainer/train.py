"""A Hugging Face `transformers.Trainer` run as a Determined trial with `determined.transformers.DetCallback`,
written as Determined's own hf_trainer_api examples are: TrainingArguments from the command line, the trial's
hyperparameters over them, `det.core.init()` and the callback, `trainer.train(resume_from_checkpoint=...)`.

To stay small and offline it trains a tiny BERT built from a config (random weights, no download) on an
in-memory task: is the first token of a sequence of random token ids in the lower half of the vocabulary?
"""

import dataclasses
import logging
import time

import determined as det
import numpy as np
import torch
import transformers
from determined.transformers import DetCallback

VOCAB = 32
LENGTH = 8


class FirstTokenTask(torch.utils.data.Dataset):
    """`size` random sequences; the label is 1 when the first token is below VOCAB / 2."""

    def __init__(self, size: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(1, VOCAB, (size, LENGTH), generator=generator)
        self.labels = (self.input_ids[:, 0] < VOCAB // 2).long()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.input_ids[i], "attention_mask": torch.ones(LENGTH, dtype=torch.long),
                "labels": self.labels[i]}


class SlowDown(transformers.TrainerCallback):
    """Sleeps after each step when the `step_sleep` hyperparameter asks it to (tests pause a running trial)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kwargs):
        if self.seconds:
            time.sleep(self.seconds)


def compute_metrics(prediction: transformers.EvalPrediction) -> dict:
    return {"accuracy": float((np.argmax(prediction.predictions, axis=-1) == prediction.label_ids).mean())}


def tiny_bert(hparams: dict) -> transformers.PreTrainedModel:
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=hparams["hidden_size"], num_hidden_layers=hparams["layers"],
        num_attention_heads=2, intermediate_size=2 * hparams["hidden_size"], max_position_embeddings=LENGTH,
        num_labels=2,
    )
    return transformers.BertForSequenceClassification(config)


def main(core_context, training_args: transformers.TrainingArguments, hparams: dict) -> None:
    det_callback = DetCallback(core_context, training_args, user_data={"task": "first-token", "vocab": VOCAB})
    trainer = transformers.Trainer(
        model=tiny_bert(hparams),
        args=training_args,
        train_dataset=FirstTokenTask(512, seed=0),
        eval_dataset=FirstTokenTask(128, seed=1),
        compute_metrics=compute_metrics,
        callbacks=[det_callback, SlowDown(hparams.get("step_sleep", 0.0))],
    )
    # DetCallback set resume_from_checkpoint when the trial has a checkpoint; Trainer does not read it itself
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)


def parse_training_args(hparams: dict) -> transformers.TrainingArguments:
    """TrainingArguments from the command line, with the trial's `training_arguments` hyperparameters over them."""
    (args,) = transformers.HfArgumentParser(transformers.TrainingArguments).parse_args_into_dataclasses()
    overrides = hparams.get("training_arguments", {})
    return dataclasses.replace(args, **overrides) if overrides else args


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info, "this example runs as a trial on a cluster"
    hparams = info.trial.hparams
    training_args = parse_training_args(hparams)
    torch.manual_seed(training_args.seed)
    with det.core.init() as core_context:
        main(core_context, training_args, hparams)
