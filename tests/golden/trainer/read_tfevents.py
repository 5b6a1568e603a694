#!/usr/bin/python3
"""Independent reader for TensorBoard event files (no tensorflow / tensorboard needed).

Parses TFRecord framing (uint64 length, masked CRC32C of the length, data, masked CRC32C of the data),
verifies both CRCs, and decodes the Event / Summary / Summary.Value protobuf wire format by hand, skipping
unknown fields by wire type. Prints one JSON object:
  {"file_version": "...", "records": N, "wall_time_ok": true,
   "scalars": [{"step": S, "tag": "...", "value": V}, ...]}
Exit code 1 with a message on stderr on any framing, CRC or protobuf error.

usage: read_tfevents.py EVENTS_FILE
"""
import json
import struct
import sys
import time


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_varint(buf, pos):
    result, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos
        if shift > 63:
            raise ValueError("varint too long")


def fields(buf):
    """Yields (field_number, wire_type, value) for a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = read_varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        if pos > len(buf):
            raise ValueError("field %d runs past the end of its message" % field)
        yield field, wire, value


def decode_event(data):
    event = {"values": []}
    for field, wire, value in fields(data):
        if field == 1 and wire == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif field == 2 and wire == 0:
            event["step"] = value - (1 << 64) if value >= (1 << 63) else value
        elif field == 3 and wire == 2:
            event["file_version"] = value.decode("utf-8")
        elif field == 5 and wire == 2:
            for sfield, swire, svalue in fields(value):
                if sfield != 1 or swire != 2:
                    continue
                tag, simple = None, None
                for vfield, vwire, vvalue in fields(svalue):
                    if vfield == 1 and vwire == 2:
                        tag = vvalue.decode("utf-8")
                    elif vfield == 2 and vwire == 5:
                        simple = struct.unpack("<f", vvalue)[0]
                event["values"].append((tag, simple))
    return event


def main():
    with open(sys.argv[1], "rb") as f:
        buf = f.read()
    pos, records, file_version, wall_ok, scalars = 0, 0, None, True, []
    now = time.time()
    while pos < len(buf):
        if pos + 12 > len(buf):
            raise ValueError("truncated record header at byte %d" % pos)
        header = buf[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
        if masked(crc32c(header)) != length_crc:
            raise ValueError("length CRC mismatch at byte %d" % pos)
        data = buf[pos + 12:pos + 12 + length]
        if len(data) != length or pos + 16 + length > len(buf):
            raise ValueError("truncated record data at byte %d" % pos)
        (data_crc,) = struct.unpack("<I", buf[pos + 12 + length:pos + 16 + length])
        if masked(crc32c(data)) != data_crc:
            raise ValueError("data CRC mismatch at byte %d" % pos)
        pos += 16 + length
        event = decode_event(data)
        wt = event.get("wall_time")
        if wt is None or not (1.5e9 < wt <= now + 60):
            wall_ok = False
        if records == 0:
            file_version = event.get("file_version")
        for tag, value in event["values"]:
            scalars.append({"step": event.get("step", 0), "tag": tag, "value": value})
        records += 1
    print(json.dumps({"file_version": file_version, "records": records, "wall_time_ok": wall_ok,
                      "scalars": scalars}, sort_keys=True))


if __name__ == "__main__":
    try:
        main()
    except (ValueError, OSError, UnicodeDecodeError, struct.error) as e:
        sys.stderr.write("read_tfevents: %s\n" % e)
        sys.exit(1)
