"""Reads an offline wandb run (RUN_DIR/run-*.wandb) into JSON: {"project", "name", "config_keys", "history"}.

The file is wandb's transaction log: the header ":W&B", 0xBEE1, version 0, then LevelDB-log blocks of 32 KiB whose
chunks (crc32c, length, type FULL/FIRST/MIDDLE/LAST) carry wandb's own protobuf Records
(wandb.proto.wandb_internal_pb2.Record), decoded here with wandb's generated classes.
"""
import glob
import json
import struct
import sys

from wandb.proto import wandb_internal_pb2

BLOCK = 32768


def records(data):
    assert data[:4] == b":W&B", "not a wandb transaction log"
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # the block's tail is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0 and length == 0:
            pos += BLOCK - pos % BLOCK if pos % BLOCK else 0
            continue
        if kind == 1:  # FULL
            yield chunk
        elif kind == 2:  # FIRST
            pending = chunk
        elif kind == 3:  # MIDDLE
            pending += chunk
        elif kind == 4:  # LAST
            yield pending + chunk
            pending = b""


def main():
    path = glob.glob(f"{sys.argv[1]}/run-*.wandb")[0]
    out = {"project": None, "name": None, "config_keys": [], "history": {}}
    for raw in records(open(path, "rb").read()):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["project"] = record.run.project
            out["name"] = record.run.display_name
            out["config_keys"] += [item.key for item in record.run.config.update]
        elif kind == "config":
            out["config_keys"] += [item.key for item in record.config.update]
        elif kind == "history":
            step = {}
            for item in record.history.item:
                step[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
            out["history"][str(record.history.step.num)] = step
    print(json.dumps(out))


if __name__ == "__main__":
    main()
