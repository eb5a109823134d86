#!/usr/bin/env python3
"""A provider that answers at once: it replays ADPP responses recorded from the simulated provider.

Used by bench/startup_share.ts to measure the runtime's own start-up share (issue 12: "start-up ...
with providers that answer at once"). Python 3 standard library only, so it starts in ~20 ms where a
Deno provider needs ~100 ms. Not a provider for real use: it answers every request from the
recording (values never change) and every call with the recorded call answer.

    python3 replay_provider.py RECORDING.json [--config IGNORED]

RECORDING.json maps "hello", "list_devices", "get_health", "wait_ready", "call",
"describe_device/<device_id>" and "read_signals/<device_id>" to the hex of a Response message
without its request_id (field 1); the answer is request_id + those bytes.
"""
import json
import struct
import sys

# Request oneof members by field number (proto/anolis/deviceprovider/v1/envelope.proto).
KINDS = {10: "hello", 11: "list_devices", 12: "describe_device", 13: "read_signals",
         14: "call", 15: "get_health", 16: "wait_ready"}
PER_DEVICE = ("describe_device", "read_signals")


def varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def put_varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def fields(buf):
    """Yields (field number, wire type, value) of one message; value is int or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, wt, v


def answer(request, recording):
    request_id, key = 0, None
    for num, _, v in fields(request):
        if num == 1:
            request_id = v
        elif num in KINDS:
            key = KINDS[num]
            if key in PER_DEVICE:
                device = next((d for n, _, d in fields(v) if n == 1), b"")
                key = key + "/" + bytes(device).decode()
    body = recording.get(key)
    if body is None:
        # CODE_INVALID_ARGUMENT (10) with a message: the runtime sees a clean error, not silence.
        msg = ("replay: nothing recorded for %s" % key).encode()
        status = b"\x08\x0a\x12" + put_varint(len(msg)) + msg
        body = b"\x12" + put_varint(len(status)) + status
    return (b"\x08" + put_varint(request_id) if request_id else b"") + body


def main():
    with open(sys.argv[1]) as f:
        recording = {k: bytes.fromhex(v) for k, v in json.load(f).items()}
    rd, wr = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = rd.read(4)
        if len(head) < 4:
            return
        (n,) = struct.unpack("<I", head)
        request = rd.read(n)
        if len(request) < n:
            return
        out = answer(request, recording)
        wr.write(struct.pack("<I", len(out)) + out)
        wr.flush()


if __name__ == "__main__":
    main()
