"""Reads an offline swanlab run (LOGDIR/run-*/run-*.swanlab, files/config.yaml) into JSON:
{"project", "name", "state", "config", "history"}.

The .swanlab file is swanlab's record store (LevelDB-log blocks of swanlab's protobuf Records), read here with
swanlab's own DataStoreReader and generated Record class, as `swanlab sync` reads it
(swanlab/sdk/internal/core_python/sync.py): the start record (project, experiment name), one scalar record per
metric and step, the finish record. The config is the run's files/config.yaml, whose entries swanlab stores as
{desc, sort, value}; "config" maps each top-level key to its value.
"""
import glob
import json
import os
import sys

import yaml
from swanlab.proto.swanlab.record.v1.record_pb2 import Record
from swanlab.proto.swanlab.run.v1.run_pb2 import RunState
from swanlab.sdk.internal.core_python.store import DataStoreReader


def main():
    runs = glob.glob(os.path.join(sys.argv[1], "run-*", "run-*.swanlab"))
    assert len(runs) == 1, f"expected one swanlab run under {sys.argv[1]}, found {runs}"
    out = {"project": None, "name": None, "state": None, "config": {}, "history": {}}
    reader = DataStoreReader()
    reader.open(runs[0])
    for raw in reader:
        record = Record()
        record.ParseFromString(raw)
        if record.HasField("start"):
            out["project"] = record.start.project
            out["name"] = record.start.name
        elif record.HasField("scalar"):
            scalar = record.scalar
            out["history"].setdefault(str(scalar.step), {})[scalar.key] = scalar.value.number
        elif record.HasField("finish"):
            out["state"] = RunState.Name(record.finish.state)
    reader.close()
    with open(os.path.join(os.path.dirname(runs[0]), "files", "config.yaml")) as f:
        config = yaml.safe_load(f) or {}
    out["config"] = {key: entry["value"] for key, entry in config.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
