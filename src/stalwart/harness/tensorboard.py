"""TensorBoard event files written without TensorFlow: scalar summaries in the TFRecord format.

A file holds records of (length: uint64 LE, masked CRC-32C of length, data, masked CRC-32C of data),
each data being a serialized `Event` protocol buffer. Only the few fields TensorBoard needs for
scalars are encoded here: wall_time (1, double), step (2, int64), file_version (3, string) and
summary (5) → value (1) → {tag (1, string), simple_value (2, float)}.
"""

from __future__ import annotations

import os
import pathlib
import socket
import struct
import time
from typing import BinaryIO

_CRC_TABLE: list[int] = []


def _table() -> list[int]:
    if not _CRC_TABLE:
        for i in range(256):
            crc = i
            for _ in range(8):
                crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
            _CRC_TABLE.append(crc)
    return _CRC_TABLE


def crc32c(data: bytes) -> int:
    table = _table()
    crc = 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint((number << 3) | wire) + payload


def _bytes_field(number: int, data: bytes) -> bytes:
    return _field(number, 2, _varint(len(data)) + data)


def event(wall_time: float, step: int, *, file_version: str | None = None,
          scalars: dict[str, float] | None = None) -> bytes:
    msg = _field(1, 1, struct.pack("<d", wall_time)) + _field(2, 0, _varint(step))
    if file_version is not None:
        msg += _bytes_field(3, file_version.encode())
    if scalars:
        values = b"".join(
            _bytes_field(1, _bytes_field(1, tag.encode()) + _field(2, 5, struct.pack("<f", value)))
            for tag, value in scalars.items()
        )
        msg += _bytes_field(5, values)
    return msg


def record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return header + struct.pack("<I", _masked(header)) + data + struct.pack("<I", _masked(data))


class ScalarWriter:
    """Appends scalar summaries to one events file in `logdir` (created on first use)."""

    def __init__(self, logdir: str | os.PathLike[str]) -> None:
        self.logdir = pathlib.Path(logdir)
        self._file: BinaryIO | None = None

    def _open(self) -> BinaryIO:
        if self._file is None:
            self.logdir.mkdir(parents=True, exist_ok=True)
            name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
            self._file = open(self.logdir / name, "ab")  # noqa: SIM115 - open for the writer's life; close() ends it
            self._file.write(record(event(time.time(), 0, file_version="brain.Event:2")))
        return self._file

    def add_scalars(self, step: int, scalars: dict[str, float]) -> None:
        numeric = {k: float(v) for k, v in scalars.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if numeric:
            f = self._open()
            f.write(record(event(time.time(), step, scalars=numeric)))
            f.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
