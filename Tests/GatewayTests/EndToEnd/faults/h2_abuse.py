#!/usr/bin/python3
"""Abusive HTTP/2 clients for the gateway's end-to-end tests (reliability cases RST-06, RST-07, RATE-03 .. RATE-05).

Usage: h2_abuse.py MODE --port PORT --path PATH [options]
  reset-flood        --streams N [--pause-ms MS]: N streams, each a HEADERS (GET PATH&i=<n>) and then an
                     RST_STREAM(CANCEL) in a write of its own (TCP_NODELAY), MS milliseconds apart, so the server may
                     read them separately; stops when the connection closes. Prints the pairs sent and the GOAWAY.
  continuation-flood HEADERS without END_HEADERS, then 20 CONTINUATION frames in one write; prints the GOAWAY.
  window-drip        --scope stream|connection [--interval S] [--timeout T]: a GET of PATH (a large response) whose
                     window is opened one byte every S seconds, the stream's (INITIAL_WINDOW_SIZE 0) or the
                     connection's (stream windows wide open, the connection's 65535 bytes never replenished but by
                     the drip); prints what ended it ("rst CODE", "goaway CODE", "closed", "timeout") and when.
  body-drip          [--interval S] [--timeout T]: a POST of PATH declaring 100000 bytes, sent one byte every S
                     seconds; prints the response status (or reset) and when it came.
Prints one JSON object. Every wait is bounded.
"""
import argparse
import json
import os
import socket
import sys
import time

from hyperframe.frame import (ContinuationFrame, DataFrame, GoAwayFrame, HeadersFrame, RstStreamFrame, SettingsFrame,
                              WindowUpdateFrame)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "TestSupport", "python"))
from h2raw import ERRORS, RawConnection, request  # noqa: E402


class Conn(RawConnection):
    def __init__(self, port, settings=None):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(5)
        sock.connect(("127.0.0.1", port))
        # `refused`: a send failed (what the peer sent may still be read; `closed` says when it closed).
        self.refused = False
        super().__init__(sock, settings)

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.refused = True
            return False

    def headers(self, stream_id, headers, end_stream=True, end_headers=True):
        frame = HeadersFrame(stream_id)
        frame.data = self.encoder.encode(headers)
        if end_headers:
            frame.flags.add("END_HEADERS")
        if end_stream:
            frame.flags.add("END_STREAM")
        return frame.serialize()

    def goaway(self):
        return next((f for f in self.frames if isinstance(f, GoAwayFrame)), None)


def describe_goaway(frame):
    if frame is None:
        return None
    return {"code": ERRORS.get(frame.error_code, str(frame.error_code)), "last": frame.last_stream_id,
            "debug": frame.additional_data.decode("latin-1")}


def reset_flood(args):
    conn = Conn(args.port)
    conn.read(lambda f: isinstance(f, SettingsFrame) and "ACK" not in f.flags, 2)
    sent = 0
    separator = "&" if "?" in args.path else "?"
    for i in range(args.streams):
        sid = 1 + 2 * i
        if not conn.send(conn.headers(sid, request(f"{args.path}{separator}i={i}"))):
            break
        if args.pause_ms:
            time.sleep(args.pause_ms / 1000)
        if not conn.send(RstStreamFrame(sid, error_code=8).serialize()):
            break
        sent = i + 1
        # Now and then, see whether the server gave up on the connection.
        if i % 25 == 24:
            conn.read(lambda f: isinstance(f, GoAwayFrame), 0.001)
            if conn.goaway() or conn.closed:
                break
    conn.read(lambda f: isinstance(f, GoAwayFrame), 3)
    print(json.dumps({"mode": "reset-flood", "sent": sent, "goaway": describe_goaway(conn.goaway()),
                      "closed": conn.closed or conn.refused}))


def continuation_flood(args):
    conn = Conn(args.port)
    conn.read(lambda f: isinstance(f, SettingsFrame) and "ACK" not in f.flags, 2)
    burst = conn.headers(1, request(args.path), end_stream=True, end_headers=False)
    for i in range(20):
        frame = ContinuationFrame(1)
        frame.data = conn.encoder.encode([(f"x-flood-{i}", "v" * 16)])
        burst += frame.serialize()
    conn.send(burst)
    conn.read(lambda f: isinstance(f, GoAwayFrame), 5)
    if not conn.closed:
        conn.read(lambda f: False, 2)
    print(json.dumps({"mode": "continuation-flood", "goaway": describe_goaway(conn.goaway()),
                      "closed": conn.closed or conn.refused}))


def window_drip(args):
    started = time.monotonic()
    if args.scope == "stream":
        conn = Conn(args.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    else:
        conn = Conn(args.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 1 << 30})
    conn.send(conn.headers(1, request(args.path)))
    head = conn.read(lambda f: f.stream_id == 1 and isinstance(f, HeadersFrame), 10)
    status = head.decoded.get(":status") if head else None
    received = 0
    outcome = "timeout"
    deadline = started + args.timeout

    def ended(frame):
        nonlocal received
        if isinstance(frame, DataFrame) and frame.stream_id == 1:
            received += len(frame.data)
        return (isinstance(frame, RstStreamFrame) and frame.stream_id == 1) or isinstance(frame, GoAwayFrame) \
            or ("END_STREAM" in frame.flags and frame.stream_id == 1)

    # Take what the open windows allow (the connection's 65535 bytes), then drip.
    end = conn.read(ended, 1.0)
    while end is None and time.monotonic() < deadline and not conn.closed and not conn.refused:
        conn.send(WindowUpdateFrame(1 if args.scope == "stream" else 0, window_increment=1).serialize())
        end = conn.read(ended, args.interval)
    final = next((f for f in reversed(conn.frames) if (isinstance(f, RstStreamFrame) and f.stream_id == 1)
                  or isinstance(f, GoAwayFrame)), None)
    if isinstance(final, RstStreamFrame):
        outcome = "rst " + ERRORS.get(final.error_code, str(final.error_code))
    elif isinstance(final, GoAwayFrame):
        outcome = "goaway " + ERRORS.get(final.error_code, str(final.error_code))
    elif conn.closed or conn.refused:
        outcome = "closed"
    print(json.dumps({"mode": "window-drip", "scope": args.scope, "status": status, "received": received,
                      "outcome": outcome, "goaway": describe_goaway(conn.goaway()),
                      "elapsed": round(time.monotonic() - started, 2)}))


def body_drip(args):
    started = time.monotonic()
    conn = Conn(args.port)
    conn.send(conn.headers(1, request(args.path, method="POST", extra=[("content-length", "100000")]), end_stream=False))
    outcome = "timeout"
    status = None
    sent = 0
    deadline = started + args.timeout

    def answered(frame):
        return frame.stream_id == 1 and (isinstance(frame, RstStreamFrame) or
                                         (isinstance(frame, HeadersFrame) and ":status" in frame.decoded)) \
            or isinstance(frame, GoAwayFrame)
    while time.monotonic() < deadline and not conn.closed and not conn.refused:
        if conn.send(DataFrame(1, data=b"x").serialize()):
            sent += 1
        frame = conn.read(answered, args.interval)
        if frame is not None:
            if isinstance(frame, HeadersFrame):
                status = frame.decoded.get(":status")
                outcome = "status " + str(status)
            elif isinstance(frame, RstStreamFrame):
                outcome = "rst " + ERRORS.get(frame.error_code, str(frame.error_code))
            else:
                outcome = "goaway " + ERRORS.get(frame.error_code, str(frame.error_code))
            break
    elapsed = round(time.monotonic() - started, 2)
    # After the answer: what ends the rest of the upload (RST_STREAM NO_ERROR once the answer is complete).
    rest = conn.read(lambda f: f.stream_id == 1 and isinstance(f, RstStreamFrame), 3) if status else None
    print(json.dumps({"mode": "body-drip", "status": status, "outcome": outcome, "sent": sent, "elapsed": elapsed,
                      "then": ("rst " + ERRORS.get(rest.error_code, "?")) if rest else None}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["reset-flood", "continuation-flood", "window-drip", "body-drip"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--pause-ms", type=float, default=0)
    parser.add_argument("--scope", choices=["stream", "connection"], default="stream")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=10)
    args = parser.parse_args()
    {"reset-flood": reset_flood, "continuation-flood": continuation_flood, "window-drip": window_drip,
     "body-drip": body_drip}[args.mode](args)


if __name__ == "__main__":
    main()
