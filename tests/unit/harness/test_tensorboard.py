"""Our TensorBoard event files are read back by TensorBoard's own loader."""

from stalwart.harness.tensorboard import ScalarWriter, crc32c


def test_crc32c_known_answer():
    assert crc32c(b"123456789") == 0xE3069283


def test_scalars_round_trip_through_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    w = ScalarWriter(tmp_path)
    for step in (10, 20, 30):
        w.add_scalars(step, {"training/loss": 1.0 / step, "training/note": "text is skipped"})
    w.add_scalars(30, {"validation/accuracy": 0.875})
    w.close()
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == ["training/loss", "validation/accuracy"]
    loss = acc.Scalars("training/loss")
    assert [e.step for e in loss] == [10, 20, 30]
    assert abs(loss[1].value - 0.05) < 1e-7
    assert acc.Scalars("validation/accuracy")[0].value == 0.875
