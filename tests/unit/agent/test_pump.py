"""A trial's output read in blocks: every line handed on once, in order, with its rank; split UTF-8 characters,
a last line without a newline and a line longer than the limit all come through."""

from __future__ import annotations

import os
import threading

from stalwart.agent import process
from stalwart.agent.launchers.process import PUMP_READ
from stalwart.agent.process import TrialProcess


def pump(tmp_path, data: bytes) -> list[tuple[dict, str]]:
    got: list[tuple[dict, str]] = []
    proc = TrialProcess({"allocation_id": "a1", "trial_id": 3}, tmp_path, "agent-0",
                        lambda meta, lines: got.extend((meta, text) for _ts, text in lines), lambda _p: None)
    r, w = os.pipe()

    def write():
        with open(w, "wb") as out:
            for i in range(0, len(data), 1000):  # in small pieces, as a trial would
                out.write(data[i:i + 1000])
                out.flush()

    writer = threading.Thread(target=write)
    writer.start()
    with open(r, "rb") as stream:
        proc._pump(iter(lambda: stream.read1(PUMP_READ), b""), "stderr")  # as the process launcher reads
    writer.join()
    return got


def test_lines_come_through_in_order_with_their_rank_and_stream(tmp_path):
    data = b"first\n\n[rank=1] from rank one\n[rank=x] not a rank\nlast, no newline"
    got = pump(tmp_path, data)
    assert [text for _m, text in got] == ["first", "", "from rank one", "[rank=x] not a rank", "last, no newline"]
    assert [m["rank_id"] for m, _t in got] == [None, None, 1, None, None]
    assert all(m["allocation_id"] == "a1" and m["trial_id"] == 3 and m["agent_id"] == "agent-0"
               and m["stdtype"] == "stderr" and m["source"] == "task" for m, _t in got)


def test_many_lines_and_multibyte_characters_across_reads(tmp_path):
    lines = [f"{i:06d} " + "é" * (i % 50) for i in range(50_000)]
    got = pump(tmp_path, ("\n".join(lines) + "\n").encode())
    assert [text for _m, text in got] == lines


def test_a_line_longer_than_the_limit_is_stored_in_pieces(tmp_path):
    long = b"y" * (process.MAX_LINE_BYTES + process.MAX_LINE_BYTES // 2)
    got = [text for _m, text in pump(tmp_path, b"before\n" + long + b"\nafter\n")]
    assert got[0] == "before" and got[-1] == "after"
    assert "".join(got[1:-1]) == long.decode() and len(got) > 3
    assert all(len(piece) <= process.MAX_LINE_BYTES + PUMP_READ for piece in got)
