"""Parquet oracle: Apache Arrow's own writer and reader (pyarrow), pandas and datasets, for
tests/oracle/test_parquet_oracle.cpp. Runs under the test-only Python (.venv/test).

  write-matrix DIR    writes the files pyarrow, pandas and datasets make (every physical and common logical type,
                      nulls everywhere, nested lists / structs / maps, dictionary on and off, data pages v1 and v2,
                      every codec, several and empty row groups, an empty file, values over 1 MiB, a 1-million-row
                      file), each NAME.parquet with NAME.expected.jsonl: its rows as pyarrow reads them back
  read FILE           pyarrow's rows of FILE as JSON lines
  read-pandas FILE    the same rows through pandas.read_parquet
  schema FILE         FILE's Arrow schema (field names, types, nesting), one line

JSON conventions are verl.cpp's (include/verl/io/value.h, src/io/parquet/column_reader.cpp), so the lines compare
with `verl data show` / io::to_json as parsed JSON: integers (dates as days, times and timestamps as ticks of
their unit, INT96 as nanoseconds), decimals and unsigned 64-bit values beyond int64 as floats, NaN / infinity as
null, binary as text (invalid UTF-8 as U+FFFD), maps as objects keyed by the key's text, structs in schema order.
"""

import datetime
import decimal
import json
import math
import os
import random
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CODECS = ["NONE", "SNAPPY", "GZIP", "ZSTD", "LZ4", "BROTLI"]


def _integerize(t):
    """The Arrow type with every temporal type replaced by its integer storage (cast keeps the ticks)."""
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, _integerize(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _integerize(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_integerize(t.key_type), _integerize(t.item_type))
    if pa.types.is_dictionary(t):
        return _integerize(t.value_type)
    return t


def _convert(value, t):
    if value is None:
        return None
    if pa.types.is_dictionary(t):
        return _convert(value, t.value_type)
    if pa.types.is_boolean(t):
        return bool(value)
    if pa.types.is_unsigned_integer(t) and value > 2**63 - 1:
        return float(value)
    if pa.types.is_integer(t):
        return int(value)
    if pa.types.is_floating(t):
        value = float(value)
        return None if math.isnan(value) or math.isinf(value) else value
    if pa.types.is_decimal(t):
        return float(decimal.Decimal(value))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes(value).decode("utf-8", "replace")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return value
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [_convert(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return {f.name: _convert(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        out = {}
        for k, v in value:
            key = _convert(k, t.key_type)
            out[key if isinstance(key, str) else json.dumps(key)] = _convert(v, t.item_type)
        return out
    if pa.types.is_null(t):
        return None
    raise TypeError(f"no JSON convention for Arrow type {t}")


def rows_as_json_lines(table):
    table = table.cast(pa.schema([pa.field(f.name, _integerize(f.type), f.nullable) for f in table.schema]))
    columns = [(f.name, f.type, table.column(f.name).to_pylist()) for f in table.schema]
    lines = []
    for i in range(table.num_rows):
        row = {name: _convert(values[i], t) for name, t, values in columns}
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
    return lines


def write_expected(path):
    with open(path[: -len(".parquet")] + ".expected.jsonl", "w", encoding="utf-8") as out:
        for line in rows_as_json_lines(pq.read_table(path)):
            out.write(line + "\n")


def _maybe_null(rng, value, rate=0.15):
    return None if rng.random() < rate else value


def all_types_table(n, seed):
    rng = random.Random(seed)
    tz = datetime.timezone.utc
    base = datetime.datetime(2021, 3, 14, 1, 59, 26, 535897)
    words = ["", "a", "héllo", "日本語", "emoji 🎉", "tab\tquote\"back\\slash", "new\nline", "x" * 40]
    columns = {
        "i8": (pa.int8(), lambda i: rng.randint(-128, 127)),
        "i16": (pa.int16(), lambda i: rng.randint(-(2**15), 2**15 - 1)),
        "i32": (pa.int32(), lambda i: rng.randint(-(2**31), 2**31 - 1)),
        "i64": (pa.int64(), lambda i: rng.randint(-(2**63), 2**63 - 1)),
        "u8": (pa.uint8(), lambda i: rng.randint(0, 255)),
        "u16": (pa.uint16(), lambda i: rng.randint(0, 2**16 - 1)),
        "u32": (pa.uint32(), lambda i: rng.randint(0, 2**32 - 1)),
        "u64": (pa.uint64(), lambda i: rng.choice([rng.randint(0, 2**53), 2**64 - 2**11 * rng.randint(1, 1000)])),
        "f16": (pa.float16(), lambda i: rng.choice([0.5, -2.0, 1024.0, 0.099975586, float("inf")])),
        "f32": (pa.float32(), lambda i: rng.choice([rng.uniform(-1e6, 1e6), float("nan"), -0.0, 1e-40])),
        "f64": (pa.float64(), lambda i: rng.choice([rng.uniform(-1e300, 1e300), rng.random(), float("-inf"), 5e-324])),
        "flag": (pa.bool_(), lambda i: rng.random() < 0.5),
        "text": (pa.string(), lambda i: rng.choice(words) + str(i)),
        "large_text": (pa.large_string(), lambda i: rng.choice(words) * rng.randint(0, 3)),
        "blob": (pa.binary(), lambda i: bytes(rng.randint(32, 126) for _ in range(rng.randint(0, 12)))),
        "fixed": (pa.binary(4), lambda i: bytes(rng.randint(48, 122) for _ in range(4))),
        "day": (pa.date32(), lambda i: datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-30000, 30000))),
        "ts_ms": (pa.timestamp("ms"), lambda i: base + datetime.timedelta(milliseconds=rng.randint(-10**12, 10**12))),
        "ts_us_utc": (pa.timestamp("us", tz="UTC"),
                      lambda i: (base + datetime.timedelta(microseconds=rng.randint(-10**15, 10**15))).replace(tzinfo=tz)),
        "ts_ns": (pa.timestamp("ns"), lambda i: rng.randint(-(2**62), 2**62)),
        "time_ms": (pa.time32("ms"), lambda i: datetime.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))),
        "time_us": (pa.time64("us"), lambda i: datetime.time(rng.randint(0, 23), 1, 2, rng.randint(0, 999999))),
        "dec_small": (pa.decimal128(9, 2), lambda i: decimal.Decimal(rng.randint(-10**8, 10**8)) / 100),
        "dec_mid": (pa.decimal128(18, 4), lambda i: decimal.Decimal(rng.randint(-2**52, 2**52)) / 10000),
        "dec_wide": (pa.decimal128(38, 10), lambda i: decimal.Decimal(rng.randint(-2**52, 2**52)) / 10**10),
    }
    arrays, fields = [], []
    for name, (t, make) in columns.items():
        values = [_maybe_null(rng, make(i)) for i in range(n)]
        if name == "ts_ns":
            arrays.append(pa.array(values, pa.int64()).cast(t))
        else:
            arrays.append(pa.array(values, t))
        fields.append(pa.field(name, t))
    # A column that is null in every row, and a required (non-nullable) one.
    arrays.append(pa.array([None] * n, pa.int32()))
    fields.append(pa.field("all_null", pa.int32()))
    arrays.append(pa.array(list(range(n)), pa.int64()))
    fields.append(pa.field("row", pa.int64(), nullable=False))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def nested_table(n, seed):
    rng = random.Random(seed)
    item = pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))])
    deep = pa.struct([("s2", pa.struct([("s3", pa.struct([("x", pa.int32()), ("y", pa.string())])),
                                         ("z", pa.list_(pa.int16()))])),
                      ("w", pa.float64())])
    schema = pa.schema([
        ("items", pa.list_(item)),
        ("tags", pa.map_(pa.string(), pa.int32())),
        ("by_id", pa.map_(pa.int32(), pa.list_(pa.float64()))),
        ("deep", deep),
        ("grid", pa.list_(pa.list_(pa.int64()))),
        ("stamps", pa.list_(pa.timestamp("ms"))),
        ("prompt", pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))),
    ])

    def strings():
        return [_maybe_null(rng, rng.choice(["p", "q r", "ü", ""])) for _ in range(rng.randint(0, 3))]

    rows = []
    for i in range(n):
        rows.append({
            "items": _maybe_null(rng, [_maybe_null(rng, {"a": _maybe_null(rng, rng.randint(-5, 5)),
                                                          "b": _maybe_null(rng, strings())})
                                       for _ in range(rng.randint(0, 3))]),
            "tags": _maybe_null(rng, [(f"k{j}", _maybe_null(rng, rng.randint(0, 9))) for j in range(rng.randint(0, 3))]),
            "by_id": _maybe_null(rng, [(j * 7, _maybe_null(rng, [rng.random() for _ in range(rng.randint(0, 2))]))
                                       for j in range(rng.randint(0, 2))]),
            "deep": _maybe_null(rng, {"s2": _maybe_null(rng, {"s3": _maybe_null(rng, {"x": _maybe_null(rng, i),
                                                                                        "y": _maybe_null(rng, str(i))}),
                                                               "z": _maybe_null(rng, [rng.randint(-3, 3)] * rng.randint(0, 2))}),
                                      "w": _maybe_null(rng, rng.random())}),
            "grid": _maybe_null(rng, [_maybe_null(rng, [rng.randint(0, 99) for _ in range(rng.randint(0, 3))])
                                      for _ in range(rng.randint(0, 3))]),
            "stamps": _maybe_null(rng, [datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=rng.randint(0, 10**8))
                                        for _ in range(rng.randint(0, 2))]),
            "prompt": [{"content": f"What is {i}+{i}?", "role": "user"}],
        })
    return pa.Table.from_pylist(rows, schema=schema)


def write_matrix(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    written = []

    def write(name, table, **options):
        path = os.path.join(out_dir, name + ".parquet")
        pq.write_table(table, path, **options)
        written.append(path)

    types = all_types_table(700, seed=1)
    nested = nested_table(400, seed=2)
    for codec in CODECS:
        for version in ["1.0", "2.0"]:
            for dictionary in [True, False]:
                tag = f"{codec.lower()}_v{version[0]}_{'dict' if dictionary else 'plain'}"
                write("types_" + tag, types, compression=codec, data_page_version=version, use_dictionary=dictionary,
                      row_group_size=250, data_page_size=4096)
                write("nested_" + tag, nested, compression=codec, data_page_version=version,
                      use_dictionary=dictionary, row_group_size=150)
    # Encodings beyond PLAIN / dictionary, and INT96 timestamps.
    plain = types.select(["i32", "i64", "u32", "f32", "f64", "text", "blob", "row"])
    write("delta_encodings", plain, use_dictionary=False, data_page_version="2.0",
          column_encoding={"i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED", "u32": "DELTA_BINARY_PACKED",
                           "text": "DELTA_BYTE_ARRAY", "blob": "DELTA_LENGTH_BYTE_ARRAY", "row": "DELTA_BINARY_PACKED",
                           "f32": "BYTE_STREAM_SPLIT", "f64": "BYTE_STREAM_SPLIT"})
    write("int96_timestamps", types.select(["ts_ms", "ts_us_utc", "row"]), use_deprecated_int96_timestamps=True)
    write("decimals_as_integers", types.select(["dec_small", "dec_mid", "dec_wide", "row"]),
          store_decimal_as_integer=True)
    # A dictionary-typed column (Arrow's categorical) and the writer's dictionary fallback to plain pages.
    categories = pa.array([f"c{i % 5}" for i in range(3000)]).dictionary_encode()
    distinct = pa.array([f"unique-{i}-" + "v" * (i % 50) for i in range(3000)])
    write("dictionary_fallback", pa.table({"category": categories, "distinct": distinct}),
          dictionary_pagesize_limit=2048, row_group_size=1000)
    # Row groups: an empty one between two full ones; an empty file; values over 1 MiB.
    path = os.path.join(out_dir, "empty_row_group.parquet")
    small = types.slice(0, 40)
    with pq.ParquetWriter(path, small.schema) as writer:
        writer.write_table(small.slice(0, 20), row_group_size=20)
        writer.write_table(small.slice(0, 0))
        writer.write_table(small.slice(20, 20), row_group_size=20)
    written.append(path)
    write("empty_file", types.slice(0, 0))
    rng = random.Random(3)
    big = ["".join(rng.choice("abcdefghij é\n") for _ in range(1_200_000 + 100_000 * i)) for i in range(3)]
    write("large_values", pa.table({"text": big + [None], "n": [1, 2, 3, 4]}), compression="SNAPPY")
    write("large_values_plain", pa.table({"text": big[:2]}), compression="NONE", use_dictionary=False)
    # One million rows in row groups of 100k.
    n = 1_000_000
    million = pa.table({"id": pa.array(range(n), pa.int64()),
                        "text": pc.binary_join_element_wise("row-", pa.array(range(n)).cast(pa.string()), ""),
                        "half": pa.array([i / 2 for i in range(n)], pa.float64())})
    write("million_rows", million, compression="SNAPPY", row_group_size=100_000)
    # pandas (the "pandas" metadata key; a named non-range index becomes a column) and datasets.
    import pandas as pd

    frame = pd.DataFrame({"question": ["1+1", "2+2", None], "answer": [2, 4, None], "score": [0.5, None, 1.0]},
                         index=pd.Index(["a", "b", "c"], name="key"))
    path = os.path.join(out_dir, "pandas_named_index.parquet")
    frame.to_parquet(path)
    written.append(path)
    path = os.path.join(out_dir, "pandas_range_index.parquet")
    frame.reset_index(drop=True).to_parquet(path)
    written.append(path)
    import datasets

    verl_rows = [{"data_source": "openai/gsm8k",
                  "prompt": [{"content": f"Natalia sold {i} clips. Let's think step by step.", "role": "user"}],
                  "ability": "math",
                  "reward_model": {"ground_truth": str(i * 3), "style": "rule"},
                  "extra_info": {"answer": f"#### {i * 3}", "index": i, "question": f"q{i}", "split": "test"}}
                 for i in range(50)]
    path = os.path.join(out_dir, "datasets_verl_rows.parquet")
    datasets.Dataset.from_list(verl_rows).to_parquet(path)
    written.append(path)

    for path in written:
        write_expected(path)
    print("\n".join(sorted(written)))


def main(argv):
    if len(argv) == 3 and argv[1] == "write-matrix":
        write_matrix(argv[2])
    elif len(argv) == 3 and argv[1] == "read":
        for line in rows_as_json_lines(pq.read_table(argv[2])):
            print(line)
    elif len(argv) == 3 and argv[1] == "read-pandas":
        import pandas as pd

        frame = pd.read_parquet(argv[2], dtype_backend="pyarrow")  # Arrow types kept: no int -> float for nulls
        print("\n".join(rows_as_json_lines(pa.Table.from_pandas(frame, preserve_index=False))))
    elif len(argv) == 3 and argv[1] == "schema":
        print(pq.read_schema(argv[2]).remove_metadata().to_string(show_field_metadata=False).replace("\n", "; "))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
