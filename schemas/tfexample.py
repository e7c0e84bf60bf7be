"""Release rows as real tf.train.Example protobufs, without TensorFlow at run time.

The message classes are built here from a descriptor that copies
tensorflow/core/example/{feature,example}.proto (same package, names, field numbers,
packing), so what we write is wire-identical to what TensorFlow writes and reads.
They live in a private descriptor pool, so importing TensorFlow in the same process
(which registers its own `tensorflow.Example`) causes no clash.

Mapping from an Arrow schema (flat: scalars and lists of scalars):
  string -> bytes_list (UTF-8), integer -> int64_list, floating -> float_list (float32).
A scalar is a list of one value. A float the row does not have (null in the Parquet file:
transforms/io/release.py) is NaN here, in its place: a float_list holds no null. For TensorFlow users, `tf_feature_spec(tf, schema)` gives the
spec for `tf.io.parse_single_example`: scalars as FixedLenFeature([]), lists as
VarLenFeature (lists can have any length, e.g. another set size). A release writes the
same spec as JSON beside its records (`feature_spec_json`, tfrecord/<table>/features.json),
so that tf.data reads them with no code of this project.
"""
from __future__ import annotations

import math
import struct
from typing import Dict, Iterator, Tuple

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _field(name, number, type_, label=_F.LABEL_OPTIONAL, type_name=None, oneof=None,
           packed=False):
    f = _F(name=name, number=number, type=type_, label=label)
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof
    if packed:
        f.options.packed = True
    return f


def _build_messages():
    """Message classes for tensorflow.{BytesList,FloatList,Int64List,Feature,Features,Example}."""
    rep = _F.LABEL_REPEATED
    feature = descriptor_pb2.FileDescriptorProto(
        name="tensorflow/core/example/feature.proto", package="tensorflow", syntax="proto3")
    feature.message_type.add(name="BytesList").field.append(
        _field("value", 1, _F.TYPE_BYTES, rep))
    feature.message_type.add(name="FloatList").field.append(
        _field("value", 1, _F.TYPE_FLOAT, rep, packed=True))
    feature.message_type.add(name="Int64List").field.append(
        _field("value", 1, _F.TYPE_INT64, rep, packed=True))
    msg = feature.message_type.add(name="Feature")
    msg.oneof_decl.add(name="kind")
    msg.field.extend([
        _field("bytes_list", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.BytesList", oneof=0),
        _field("float_list", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FloatList", oneof=0),
        _field("int64_list", 3, _F.TYPE_MESSAGE, type_name=".tensorflow.Int64List", oneof=0),
    ])
    msg = feature.message_type.add(name="Features")
    entry = msg.nested_type.add(name="FeatureEntry")  # how protoc spells map<string, Feature>
    entry.options.map_entry = True
    entry.field.extend([_field("key", 1, _F.TYPE_STRING),
                        _field("value", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.Feature")])
    msg.field.append(_field("feature", 1, _F.TYPE_MESSAGE, rep,
                            type_name=".tensorflow.Features.FeatureEntry"))

    example = descriptor_pb2.FileDescriptorProto(
        name="tensorflow/core/example/example.proto", package="tensorflow", syntax="proto3",
        dependency=["tensorflow/core/example/feature.proto"])
    example.message_type.add(name="Example").field.append(
        _field("features", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features"))

    pool = descriptor_pool.DescriptorPool()
    pool.Add(feature)
    pool.Add(example)
    names = ("BytesList", "FloatList", "Int64List", "Feature", "Features", "Example")
    return tuple(message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{n}"))
                 for n in names)


BytesList, FloatList, Int64List, Feature, Features, Example = _build_messages()

BYTES, INT64, FLOAT = "bytes", "int64", "float32"

# What an int64 feature (and a Parquet int64 column) holds: readers refuse an integer
# outside it when they read it (transforms/io/strict_json.py), never the writer.
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def feature_spec(schema: pa.Schema) -> Dict[str, Tuple[str, bool]]:
    """{feature name: (kind, is_list)} for a flat Arrow schema."""
    spec = {}
    for field in schema:
        t, is_list = field.type, pa.types.is_list(field.type)
        if is_list:
            t = t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            kind = BYTES
        elif pa.types.is_integer(t) or pa.types.is_boolean(t):  # booleans as 0/1
            kind = INT64
        elif pa.types.is_floating(t):
            kind = FLOAT
        else:
            raise TypeError(f"{field.name}: no tf.train.Feature kind for {field.type}")
        spec[field.name] = (kind, is_list)
    return spec


def feature_spec_json(schema: pa.Schema) -> Dict[str, dict]:
    """{feature: {"dtype": "string" | "int64" | "float32", "list": bool, "description"}}:
    the spec as plain data, for `tf.io.VarLenFeature(dtype)` (a list) or
    `tf.io.FixedLenFeature([], dtype)`; "string" features hold UTF-8 bytes, booleans are
    int64 0/1, floats float32."""
    from schemas.columns import description
    names = {BYTES: "string", INT64: "int64", FLOAT: "float32"}
    return {name: {"dtype": names[kind], "list": is_list,
                   "description": description(schema.field(name))}
            for name, (kind, is_list) in feature_spec(schema).items()}


def tf_feature_spec(tf, schema: pa.Schema) -> dict:
    """The spec for `tf.io.parse_single_example`; pass the imported `tensorflow` module."""
    dtypes = {BYTES: tf.string, INT64: tf.int64, FLOAT: tf.float32}
    return {name: tf.io.VarLenFeature(dtypes[kind]) if is_list
            else tf.io.FixedLenFeature([], dtypes[kind])
            for name, (kind, is_list) in feature_spec(schema).items()}


def to_example_bytes(row: dict, schema: pa.Schema) -> bytes:
    """Serialise one row as a tf.train.Example (map keys sorted: same row, same bytes)."""
    example = Example()
    for name, (kind, is_list) in feature_spec(schema).items():
        values = row[name] if is_list else [row[name]]
        feature = example.features.feature[name]
        if kind == BYTES:
            feature.bytes_list.value.extend(
                v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values)
        elif kind == INT64:
            feature.int64_list.value.extend(int(v) for v in values)
        else:
            feature.float_list.value.extend(math.nan if v is None else float(v) for v in values)
    return example.SerializeToString(deterministic=True)


def parse_example_bytes(data: bytes, schema: pa.Schema) -> dict:
    """Parse a serialised Example back into a row (floats come back as float32 values)."""
    example = Example.FromString(data)
    row = {}
    for name, (kind, is_list) in feature_spec(schema).items():
        if name not in example.features.feature:
            raise ValueError(f"Example has no feature {name!r}")
        feature = example.features.feature[name]
        if kind == BYTES:
            values = [v.decode("utf-8") for v in feature.bytes_list.value]
        elif kind == INT64:
            values = list(feature.int64_list.value)
        else:
            values = list(feature.float_list.value)
        if not is_list and len(values) != 1:
            raise ValueError(f"feature {name!r} should hold one value, has {len(values)}")
        row[name] = values if is_list else values[0]
    return row


# --- TFRecord framing, for reading without TensorFlow --------------------------------
# Each record: uint64 length, uint32 masked crc32c(length), data, uint32 masked crc32c(data).

def _masked_crc32c(data: bytes) -> int:
    import google_crc32c  # in requirements.txt (Beam's TFRecord writer needs it too)
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(data: bytes) -> bytes:
    """One record as a TFRecord file holds it (what tf.io.TFRecordWriter writes)."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", _masked_crc32c(length)) + data
            + struct.pack("<I", _masked_crc32c(data)))


def iter_tfrecord_file(path: str) -> Iterator[bytes]:
    """Yield the records of one uncompressed TFRecord file, checking both CRCs."""
    from apache_beam.io.filesystems import FileSystems  # local paths and gs:// alike

    with FileSystems.open(path, compression_type="uncompressed") as f:
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) != 12:
                raise ValueError(f"{path}: truncated record header")
            length_bytes, length_crc = header[:8], struct.unpack("<I", header[8:])[0]
            if _masked_crc32c(length_bytes) != length_crc:
                raise ValueError(f"{path}: bad length crc")
            (length,) = struct.unpack("<Q", length_bytes)
            data, footer = f.read(length), f.read(4)
            if len(data) != length or len(footer) != 4:
                raise ValueError(f"{path}: truncated record")
            if _masked_crc32c(data) != struct.unpack("<I", footer)[0]:
                raise ValueError(f"{path}: bad data crc")
            yield data
