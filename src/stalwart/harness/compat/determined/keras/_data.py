"""A TFKerasTrial's data loaders as what `model.fit()` trains on: an endless stream of batches.

The loaders may return `(x, y)` or `(x, y, sample_weight)` of arrays, a `tf.data.Dataset` (wrapped with
`context.wrap_dataset`), or a `keras.utils.Sequence` (Keras 3's PyDataset). Arrays are batched and, when `shuffle`
is on, shuffled per pass from the trial's seed, so a resumed trial skips exactly the batches it trained already;
a Dataset is repeated from its start (as in Determined); a Sequence is read on from the batch it stopped at.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import tensorflow as tf  # type: ignore[import-untyped]  # TensorFlow ships no type information

InputData = Any
"""What a data loader hook may return: a tuple of arrays, a tf.data.Dataset or a keras.utils.Sequence."""


def _is_sequence(data: Any) -> bool:
    import keras  # type: ignore[import-untyped]  # Keras 3 ships no type information

    return isinstance(data, keras.utils.PyDataset)


def _array_tuple(data: Any, hook: str) -> tuple[Any, ...]:
    if isinstance(data, tuple | list) and len(data) in (2, 3):
        return tuple(data)
    raise TypeError(f"{hook}() must return (x, y), (x, y, sample_weight), a tf.data.Dataset or a "
                    f"keras.utils.Sequence; got {type(data).__name__}")


def _num_records(arrays: tuple[Any, ...]) -> int:
    first = arrays[0]
    if isinstance(first, dict):
        first = next(iter(first.values()))
    elif isinstance(first, list | tuple):
        first = first[0]
    return len(first)


def batches_per_epoch(data: Any, batch_size: int, hook: str = "build_training_data_loader") -> int | None:
    """Batches in one pass over `data`, or None when it cannot tell (an endless or unknown-size Dataset)."""
    if isinstance(data, tf.data.Dataset):
        cardinality = int(data.cardinality().numpy())
        return cardinality if cardinality > 0 else None
    if _is_sequence(data):
        return len(data)
    return math.ceil(_num_records(_array_tuple(data, hook)) / batch_size)


def _sequence_batches(sequence: Any, start: int) -> Iterator[Any]:
    index = start
    while True:
        yield tuple(sequence[index % len(sequence)])
        index += 1
        if index % len(sequence) == 0:
            sequence.on_epoch_end()


def _sequence_dataset(sequence: Any, start: int) -> tf.data.Dataset:
    first = sequence[0]
    signature = tuple(tf.TensorSpec(shape=(None, *tf.convert_to_tensor(part).shape[1:]),
                                    dtype=tf.convert_to_tensor(part).dtype) for part in first)
    return tf.data.Dataset.from_generator(lambda: _sequence_batches(sequence, start), output_signature=signature)


def training_stream(data: Any, *, batch_size: int, shuffle: bool, seed: int, batches_done: int,
                    dataset_wrapped: bool) -> tf.data.Dataset:
    """An endless Dataset of training batches, positioned after the `batches_done` a resumed trial trained."""
    if isinstance(data, tf.data.Dataset):
        if not dataset_wrapped:
            raise ValueError("wrap a tf.data.Dataset training loader with context.wrap_dataset(dataset)")
        return data.repeat()
    if _is_sequence(data):
        return _sequence_dataset(data, batches_done)
    arrays = _array_tuple(data, "build_training_data_loader")
    dataset = tf.data.Dataset.from_tensor_slices(arrays)
    if shuffle:
        dataset = dataset.shuffle(_num_records(arrays), seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size).repeat().skip(batches_done)


def validation_data(data: Any, *, batch_size: int, dataset_wrapped: bool) -> Any:
    """The validation loader's output as `model.fit(validation_data=...)` takes it."""
    if isinstance(data, tf.data.Dataset):
        if not dataset_wrapped:
            raise ValueError("wrap a tf.data.Dataset validation loader with context.wrap_dataset(dataset)")
        return data
    if _is_sequence(data):
        return data
    return tf.data.Dataset.from_tensor_slices(_array_tuple(data, "build_validation_data_loader")).batch(batch_size)
