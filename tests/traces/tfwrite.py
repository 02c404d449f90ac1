"""Write TensorBoard event files byte by byte, so tests can build broken ones."""

from __future__ import annotations

import importlib
import struct
from typing import Any

event_pb2: Any = importlib.import_module("tensorboard.compat.proto.event_pb2")
summary_pb2: Any = importlib.import_module("tensorboard.compat.proto.summary_pb2")
tensor_pb2: Any = importlib.import_module("tensorboard.compat.proto.tensor_pb2")
tensor_shape_pb2: Any = importlib.import_module("tensorboard.compat.proto.tensor_shape_pb2")
_stub: Any = importlib.import_module("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")


def masked_crc32c(data: bytes) -> int:
    """TensorBoard's masked CRC-32C (the writer's own)."""
    return int(_stub.masked_crc32c(data))


__all__ = ["record", "scalar_event", "tensor_event", "tf_file"]


def record(data: bytes) -> bytes:
    """One TFRecord: length, its checksum, the data, the data's checksum."""
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


def scalar_event(step: int, tag: str, value: float) -> bytes:
    """A legacy ``simple_value`` scalar event."""
    value_pb = summary_pb2.Summary.Value(tag=tag, simple_value=value)
    summary = summary_pb2.Summary(value=[value_pb])
    event = event_pb2.Event(step=step, wall_time=1.0, summary=summary)
    return bytes(event.SerializeToString())


def tensor_event(step: int, tag: str, dims: list[int], dtype: int = 1) -> bytes:
    """A tensor event declaring shape ``dims`` (data type ``dtype``) and holding one value."""
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims]
    )
    proto = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, float_val=[1.0])
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, tensor=proto)])
    event = event_pb2.Event(step=step, wall_time=1.0, summary=summary)
    return bytes(event.SerializeToString())


def tf_file(events: list[bytes]) -> tuple[bytes, list[int]]:
    """A file version record then ``events``; also each record's start offset."""
    version = event_pb2.Event(wall_time=1.0, file_version="brain.Event:2")
    records = [record(bytes(version.SerializeToString())), *(record(e) for e in events)]
    offsets: list[int] = []
    position = 0
    for item in records:
        offsets.append(position)
        position += len(item)
    return b"".join(records), offsets
