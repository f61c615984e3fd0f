#!/usr/bin/python3
"""An h2spec-style suite of hostile HTTP/2 clients for the cases of docs/reliability.md §2.2 (H2-01 .. H2-17).

Usage: h2spec.py --port PORT [--tls-port PORT --ca FILE] [--prefix /up] [--stub /stub] [--big-mb N --hold S]
                 [CASE ...]          (no CASE: every case but H2-10, which needs --big-mb/--hold and a memory probe)
  PORT      cleartext port speaking h2c with prior knowledge (and HTTP/1.1)
  --prefix  path prefix that reaches the upstream; requests of a case carry `tag=<case>` in their query, so the
            caller can check what the upstream received
  --stub    a path answered 200 without an upstream (cheap requests for H2-16)
Prints one JSON object per case: {"case", "pass", "detail", ...}. Exit status 0 when every case ran (pass or fail).

Frames are written and read raw (hyperframe + hpack from Debian's python3-h2), so the suite can send what a
well-behaved client library refuses to. Everything is bounded: every read has a deadline, every flood a count.
"""
import argparse
import json
import os
import socket
import ssl
import struct
import sys
import time

from hyperframe.frame import (ContinuationFrame, DataFrame, GoAwayFrame, HeadersFrame, PingFrame, RstStreamFrame,
                              SettingsFrame, WindowUpdateFrame)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "TestSupport", "python"))
from h2raw import ERRORS, PREFACE, RawConnection, request  # noqa: E402


class Conn(RawConnection):
    """One raw HTTP/2 connection: frames out, frames in, close detection."""

    def __init__(self, port, settings=None, rcvbuf=None, tls=None):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(5)
        sock.connect(("127.0.0.1", port))
        if tls:
            sock = tls.wrap_socket(sock, server_hostname="localhost")
        super().__init__(sock, settings)
        self.decoder.max_allowed_table_size = 65536

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def headers(self, stream_id, headers, end_stream=True, end_headers=True, raw_block=None):
        frame = HeadersFrame(stream_id)
        frame.data = raw_block if raw_block is not None else self.encoder.encode(headers)
        if end_headers:
            frame.flags.add("END_HEADERS")
        if end_stream:
            frame.flags.add("END_STREAM")
        return self.send(frame.serialize())

    def goaway(self, timeout=5.0):
        return self.read(lambda f: isinstance(f, GoAwayFrame), timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def stream_outcome(conn, stream_id, timeout=5.0):
    """'status N', 'rst NAME', 'goaway NAME', or 'closed'/'timeout' for one stream."""
    def done(frame):
        return (frame.stream_id == stream_id and (isinstance(frame, RstStreamFrame) or
                (isinstance(frame, HeadersFrame) and ":status" in getattr(frame, "decoded", {}))))\
            or isinstance(frame, GoAwayFrame)
    frame = conn.read(done, timeout)
    if frame is None:
        return "closed" if conn.closed else "timeout"
    if isinstance(frame, GoAwayFrame):
        return "goaway " + ERRORS.get(frame.error_code, str(frame.error_code))
    if isinstance(frame, RstStreamFrame):
        return "rst " + ERRORS.get(frame.error_code, str(frame.error_code))
    return "status " + frame.decoded[":status"]


def complete(conn, stream_id, timeout=5.0):
    """Reads one stream to its end, granting window as data arrives; returns (status, body bytes)."""
    status, body = None, b""

    def done(frame):
        nonlocal status, body
        if frame.stream_id == stream_id and isinstance(frame, HeadersFrame):
            status = frame.decoded.get(":status", status)
        if frame.stream_id == stream_id and isinstance(frame, DataFrame):
            body += frame.data
            if frame.flow_controlled_length:
                conn.send(WindowUpdateFrame(0, window_increment=frame.flow_controlled_length).serialize()
                          + WindowUpdateFrame(stream_id, window_increment=frame.flow_controlled_length).serialize())
        return (frame.stream_id == stream_id and "END_STREAM" in frame.flags) or \
            (frame.stream_id == stream_id and isinstance(frame, RstStreamFrame)) or isinstance(frame, GoAwayFrame)
    conn.read(done, timeout)
    return status, body


def healthy(args):
    """A fresh connection still gets 200 for the stub path."""
    conn = Conn(args.port)
    conn.headers(1, request(args.stub))
    outcome = stream_outcome(conn, 1)
    conn.close()
    return outcome == "status 200"


def result(case, passed, detail, **extra):
    print(json.dumps(dict(case=case, passed=bool(passed), detail=detail, **extra)), flush=True)


# ------------------------------------------------------------------------------------------------------------ cases

def h2_01(args):
    conn = Conn(args.port)
    sent = 0
    batch = b""
    for i in range(3000):
        sid = 1 + 2 * i
        frame = HeadersFrame(sid)
        frame.data = conn.encoder.encode(request(f"{args.prefix}/slow?ms=1000&tag=h2-01&i={i}"))
        frame.flags.add("END_HEADERS")
        frame.flags.add("END_STREAM")
        batch += frame.serialize() + RstStreamFrame(sid, error_code=8).serialize()
        if i % 100 == 99:
            if not conn.send(batch):
                break
            batch = b""
            sent = i + 1
    goaway = conn.goaway(5)
    ended = "goaway " + ERRORS.get(goaway.error_code, "?") if goaway else ("closed" if conn.closed else "open")
    conn.close()
    ok = healthy(args)
    result("H2-01", ended != "open" and ok, f"pairs sent {sent}; connection {ended}; other clients served {ok}")


def h2_02(args):
    """Server-side resets provoked by the client. With nghttp2 1.52, WINDOW_UPDATE 0 on a stream and DATA on a
    half-closed stream are connection errors (GOAWAY at once), so the provocation is a malformed request (an
    uppercase header name), which the server resets with PROTOCOL_ERROR; every one counts against the budget."""
    conn = Conn(args.port)
    attempts = 0
    for i in range(3000):
        sid = 1 + 2 * i
        attempts += 1
        if not conn.headers(sid, request(f"{args.prefix}/x?tag=h2-02&i={i}", extra=[("X-Upper", "1")])):
            break
        if i % 100 == 99:
            conn.read(lambda f: False, 0.05)
            if conn.closed or any(isinstance(f, GoAwayFrame) for f in conn.frames):
                break
    conn.read(lambda f: isinstance(f, GoAwayFrame), 3)
    goaway = next((f for f in conn.frames if isinstance(f, GoAwayFrame)), None)
    resets = sum(1 for f in conn.frames if isinstance(f, RstStreamFrame))
    ended = ("goaway " + ERRORS.get(goaway.error_code, "?")) if goaway else ("closed" if conn.closed else "open")
    conn.close()
    ok = healthy(args)
    result("H2-02", ended != "open" and 0 < resets <= 1100 and ok,
           f"malformed streams sent {attempts}; server resets seen {resets}; connection {ended}; "
           f"other clients served {ok}")


def h2_03(args):
    conn = Conn(args.port)
    frame = HeadersFrame(1)
    frame.data = conn.encoder.encode(request(f"{args.prefix}/cont?tag=h2-03"))
    frame.flags.add("END_STREAM")
    conn.send(frame.serialize())
    sent = 0
    for i in range(20000):
        cont = ContinuationFrame(1)
        cont.data = conn.encoder.encode([(f"x-flood-{i}", "v" * 16)])
        if not conn.send(cont.serialize()):
            break
        sent = i + 1
    goaway = conn.goaway(5)
    ended = ("goaway " + ERRORS.get(goaway.error_code, "?")) if goaway else ("closed" if conn.closed else "open")
    conn.close()
    result("H2-03", ended != "open", f"CONTINUATION frames accepted before the close: {sent}; connection {ended}")


def h2_04(args):
    conn = Conn(args.port)
    encoder = conn.encoder
    first = encoder.encode(request(f"{args.prefix}/bomb?tag=h2-04") + [("x", "b" * 4000)])
    conn.headers(1, None, raw_block=first)
    first_outcome = stream_outcome(conn, 1)
    # Index 62 is the most recently inserted dynamic entry: ("x", 4000 bytes). 4000 references: 16 MB decoded.
    block = encoder.encode(request(f"{args.prefix}/bomb?tag=h2-04-b")) + bytes([0x80 | 62]) * 4000
    conn.headers(3, None, raw_block=block)
    outcome = stream_outcome(conn, 3)
    conn.close()
    refused = not outcome.startswith("status 2")
    result("H2-04", refused, f"one 4000-byte header: {first_outcome}; bomb (16 MB decoded): {outcome}")


def h2_05(args):
    outcomes = []
    # A dynamic table size update (0x20 prefix, 5-bit) to 8192, above the default SETTINGS_HEADER_TABLE_SIZE 4096.
    size_update = bytes([0x3f, 0xe1, 0x3f])  # 31 + 8161 = 8192
    conn = Conn(args.port)
    conn.headers(1, None, raw_block=size_update + conn.encoder.encode(request(f"{args.prefix}/x?tag=h2-05")))
    outcomes.append(stream_outcome(conn, 1))
    conn.close()
    # A Huffman-coded literal value whose padding is not all ones (EOS prefix violated).
    conn = Conn(args.port)
    block = conn.encoder.encode(request(f"{args.prefix}/x?tag=h2-05-b"))
    block += bytes([0x00, 0x01, ord("a"), 0x81, 0x00])  # literal without indexing, name "a", huffman value 0x00
    conn.headers(1, None, raw_block=block)
    outcomes.append(stream_outcome(conn, 1))
    conn.close()
    passed = all(o in ("goaway COMPRESSION_ERROR", "closed") for o in outcomes)
    result("H2-05", passed, f"oversized table size update: {outcomes[0]}; bad Huffman padding: {outcomes[1]}")


def flood(args, case, frame_bytes, count):
    conn = Conn(args.port, rcvbuf=1024)
    conn.sock.settimeout(3)
    sent = 0
    chunk = frame_bytes * 500
    for _ in range(count // 500):
        if not conn.send(chunk):
            break
        sent += 500
    goaway = conn.goaway(3) if not conn.closed else None
    ended = ("goaway " + ERRORS.get(goaway.error_code, "?")) if goaway else ("closed" if conn.closed else "open")
    conn.close()
    ok = healthy(args)
    return sent, ended, ok


def h2_06(args):
    sent, ended, ok = flood(args, "H2-06", SettingsFrame(0).serialize(), 200000)
    result("H2-06", ended != "open" and ok, f"empty SETTINGS sent without reading: {sent}; connection {ended}; "
                                            f"other clients served {ok}")


def h2_07(args):
    sent, ended, ok = flood(args, "H2-07", PingFrame(0, opaque_data=b"12345678").serialize(), 200000)
    conn = Conn(args.port)
    many = b"".join(struct.pack(">HI", 0x4, 65535 + i) for i in range(40))  # 40 INITIAL_WINDOW_SIZE entries
    conn.send(struct.pack(">I", len(many))[1:] + bytes([0x4, 0x0]) + struct.pack(">I", 0) + many)
    goaway = conn.goaway(3)
    many_outcome = ("goaway " + ERRORS.get(goaway.error_code, "?")) if goaway else ("closed" if conn.closed else "open")
    conn.close()
    result("H2-07", ended != "open" and many_outcome != "open" and ok,
           f"PINGs sent without reading: {sent}; connection {ended}; SETTINGS with 40 entries: {many_outcome}")


def h2_08(args):
    conn = Conn(args.port)
    conn.headers(1, request(f"{args.prefix}/echo?tag=h2-08", method="POST"), end_stream=False)
    sent = 0
    empty = DataFrame(1, data=b"").serialize()
    for i in range(0, 10000, 500):
        if not conn.send(empty * 500):
            break
        sent = i + 500
    goaway = conn.goaway(3)
    ended = ("goaway " + ERRORS.get(goaway.error_code, "?")) if goaway else ("closed" if conn.closed else "open")
    conn.close()
    result("H2-08", ended != "open", f"empty DATA frames sent: {sent}; connection {ended}")


def h2_09(args):
    conn = Conn(args.port)
    conn.send(WindowUpdateFrame(0, window_increment=2 ** 31 - 1).serialize() * 2)
    goaway = conn.goaway(3)
    ended = ("goaway " + ERRORS.get(goaway.error_code, "?")) if goaway else ("closed" if conn.closed else "open")
    conn.close()
    result("H2-09", ended == "goaway FLOW_CONTROL_ERROR", f"connection {ended}")


def h2_10(args):
    conn = Conn(args.port, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    conn.headers(1, request(f"{args.prefix}/big?mb={args.big_mb}&tag=h2-10"))
    head = conn.read(lambda f: f.stream_id == 1 and isinstance(f, HeadersFrame), 10)
    conn.read(lambda f: False, 1.0)
    data_frames = [f for f in conn.frames if isinstance(f, DataFrame) and f.stream_id == 1 and f.data]
    status = head.decoded.get(":status") if head else None
    # Now drip: a 1-byte window at a time, five times.
    dripped = 0
    for _ in range(5):
        conn.send(WindowUpdateFrame(1, window_increment=1).serialize())
        frame = conn.read(lambda f: f.stream_id == 1 and isinstance(f, DataFrame) and f.data, 2)
        dripped += len(frame.data) if frame else 0
    # The caller samples the server's memory while the response is held back.
    time.sleep(args.hold)
    conn.close()
    result("H2-10", status == "200" and not data_frames and dripped == 5,
           f"status {status}; DATA before any window: {len(data_frames)}; bytes for five 1-byte WINDOW_UPDATEs: {dripped}")


def h2_11(args):
    conn = Conn(args.port)
    for i in range(300):
        conn.headers(1 + 2 * i, request(f"{args.prefix}/echo?tag=h2-11&i={i}", method="POST"), end_stream=False)
    conn.read(lambda f: False, 2.0)
    refused = sum(1 for f in conn.frames if isinstance(f, RstStreamFrame) and f.error_code == 7)
    goaway = any(isinstance(f, GoAwayFrame) for f in conn.frames)
    # The connection survives: a PING is answered.
    conn.send(PingFrame(0, opaque_data=b"survive!").serialize())
    pong = conn.read(lambda f: isinstance(f, PingFrame) and "ACK" in f.flags, 3)
    conn.close()
    result("H2-11", refused >= 200 and pong is not None and not goaway,
           f"REFUSED_STREAM resets: {refused} of 300 (limit 100); GOAWAY {goaway}; PING answered {pong is not None}")


def h2_12(args):
    """GOAWAY(PROTOCOL_ERROR) is the RFC's answer; nghttp2 deliberately ignores HEADERS on a stream id at or below
    the last one it saw (it cannot tell a closed stream from one never opened). Accepted: GOAWAY, RST(STREAM_CLOSED),
    a close, or "ignored" (no response at all, and the caller checks that the upstream never saw the request)."""
    outcomes = {}
    path = f"{args.prefix}/x?tag=h2-12"
    conn = Conn(args.port)
    conn.headers(5, request(args.stub))
    complete(conn, 5)
    conn.headers(3, request(path))
    outcomes["id going down"] = stream_outcome(conn, 3, 2)
    conn.close()
    conn = Conn(args.port)
    conn.headers(2, request(path))
    outcomes["even id"] = stream_outcome(conn, 2)
    conn.close()
    conn = Conn(args.port)
    conn.headers(1, request(args.stub))
    complete(conn, 1)
    conn.headers(1, request(path))
    outcomes["headers on a closed stream"] = stream_outcome(conn, 1, 2)
    # Whatever happened above, the connection (if open) still serves a valid new stream.
    if not conn.closed and not any(isinstance(f, GoAwayFrame) for f in conn.frames):
        conn.headers(7, request(args.stub))
        outcomes["next valid stream"] = stream_outcome(conn, 7)
    conn.close()
    outcomes = {k: ("ignored" if v == "timeout" else v) for k, v in outcomes.items()}
    passed = all(o.startswith("goaway") or o in ("rst STREAM_CLOSED", "rst PROTOCOL_ERROR", "closed", "ignored")
                 for k, o in outcomes.items() if k != "next valid stream") \
        and outcomes.get("next valid stream", "status 200") == "status 200" \
        and outcomes["even id"] != "ignored"
    result("H2-12", passed, "; ".join(f"{k}: {v}" for k, v in outcomes.items()))


MALFORMED = {
    "uppercase name": [("X-Upper", "1")],
    "transfer-encoding": [("transfer-encoding", "chunked")],
    "connection": [("connection", "keep-alive")],
    "keep-alive": [("keep-alive", "timeout=5")],
    "upgrade": [("upgrade", "h2c")],
    "te gzip": [("te", "gzip")],
    "CR in value": [("x-bad", "a\rb")],
    "LF in value": [("x-bad", "a\nb")],
    "NUL in value": [("x-bad", "a\x00b")],
}


def h2_13(args):
    outcomes = {}
    sid = 1
    conn = Conn(args.port)

    def attempt(name, headers):
        nonlocal sid, conn
        if conn.closed:
            conn = Conn(args.port)
            sid = 1
        block = conn.encoder.encode(headers) if isinstance(headers, list) else headers
        conn.headers(sid, None, raw_block=block)
        outcomes[name] = stream_outcome(conn, sid, 3)
        sid += 2

    for name, extra in MALFORMED.items():
        attempt(name, request(f"{args.prefix}/mal?tag=h2-13", extra=extra))
    base = dict(method=("GET"), path=f"{args.prefix}/mal?tag=h2-13")
    attempt("missing :path", [(":method", "GET"), (":scheme", "http"), (":authority", "localhost")])
    attempt("missing :method", [(":scheme", "http"), (":authority", "localhost"), (":path", base["path"])])
    attempt("missing :scheme", [(":method", "GET"), (":authority", "localhost"), (":path", base["path"])])
    attempt("pseudo after regular", [(":method", "GET"), (":scheme", "http"), ("x-a", "1"), (":authority", "localhost"),
                                      (":path", base["path"])])
    attempt("duplicate :path", request(base["path"]) + [(":path", base["path"])])
    conn.close()
    allowed = ("rst PROTOCOL_ERROR", "status 400", "goaway PROTOCOL_ERROR", "closed")
    bad = {k: v for k, v in outcomes.items() if v not in allowed}
    result("H2-13", not bad, "; ".join(f"{k}: {v}" for k, v in outcomes.items()))


def h2_14(args):
    conn = Conn(args.port)
    conn.headers(1, request(f"{args.prefix}/echo?tag=h2-14", method="POST", extra=[("content-length", "3")]),
                 end_stream=False)
    conn.send(DataFrame(1, data=b"12345", flags=["END_STREAM"]).serialize())
    outcome = stream_outcome(conn, 1)
    conn.close()
    result("H2-14", outcome in ("rst PROTOCOL_ERROR", "status 400", "goaway PROTOCOL_ERROR"), f"CL 3 with 5 bytes: {outcome}")


def h2_15(args):
    outcomes = {}
    cases = {
        "CRLF in :path": request(f"{args.prefix}/a HTTP/1.1\r\nX-Injected: y\r\nX: z?tag=h2-15"),
        "space in :path": request(f"{args.prefix}/a b?tag=h2-15"),
        "space in name": request(f"{args.prefix}/n?tag=h2-15", extra=[("x bad", "1")]),
        "colon in name": request(f"{args.prefix}/n?tag=h2-15", extra=[("x:bad", "1")]),
        ":authority differs from host": request(f"{args.prefix}/n?tag=h2-15", authority="good.example",
                                                extra=[("host", "evil.example")]),
    }
    for name, headers in cases.items():
        conn = Conn(args.port)
        conn.headers(1, headers)
        outcomes[name] = stream_outcome(conn, 1, 3)
        conn.close()
    allowed = ("rst PROTOCOL_ERROR", "status 400", "goaway PROTOCOL_ERROR", "closed")
    bad = {k: v for k, v in outcomes.items() if v not in allowed}
    result("H2-15", not bad, "; ".join(f"{k}: {v}" for k, v in outcomes.items()))


def h2_16(args):
    conn = Conn(args.port)
    sid = 1
    goaway = None
    for _ in range(args.max_requests // 50 + 2):
        batch = set()
        for _ in range(50):
            conn.headers(sid, request(args.stub))
            batch.add(sid)
            sid += 2

        def batch_done(frame):
            if isinstance(frame, GoAwayFrame) and frame.error_code != 0:
                return True
            if frame.stream_id in batch and ("END_STREAM" in frame.flags or isinstance(frame, RstStreamFrame)):
                batch.discard(frame.stream_id)
            return not batch
        conn.read(batch_done, 10)
        goaway = next((f for f in conn.frames if isinstance(f, GoAwayFrame)), None)
        if goaway or conn.closed:
            conn.read(lambda f: False, 0.5)
            break
    answered = sorted({f.stream_id for f in conn.frames
                       if isinstance(f, HeadersFrame) and getattr(f, "decoded", {}).get(":status") == "200"})
    refused = sum(1 for f in conn.frames if isinstance(f, RstStreamFrame) and f.error_code == 7)
    last = goaway.last_stream_id if goaway else None
    conn.close()
    passed = goaway is not None and goaway.error_code == 0 and last is not None and answered \
        and answered[-1] == last and len(answered) == (last + 1) // 2
    result("H2-16", passed, f"answered {len(answered)}; GOAWAY last_stream_id {last} "
                            f"({ERRORS.get(goaway.error_code) if goaway else 'none'}); last answered stream "
                            f"{answered[-1] if answered else None}; later streams refused {refused}")


def h2_17(args):
    if not args.tls_port:
        result("H2-17", False, "no --tls-port given")
        return
    outcomes = {}
    for offer in (["h2"], ["http/1.1"], ["foo"], ["h2", "http/1.1"]):
        context = ssl.create_default_context(cafile=args.ca)
        context.set_alpn_protocols(offer)
        try:
            sock = context.wrap_socket(socket.create_connection(("127.0.0.1", args.tls_port), timeout=5),
                                       server_hostname="localhost")
            outcomes[",".join(offer)] = sock.selected_alpn_protocol() or "none"
            sock.close()
        except ssl.SSLError as error:
            outcomes[",".join(offer)] = "alert " + (error.reason or str(error))
    # The h2 preface on a connection that negotiated http/1.1.
    context = ssl.create_default_context(cafile=args.ca)
    context.set_alpn_protocols(["http/1.1"])
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", args.tls_port), timeout=5),
                               server_hostname="localhost")
    sock.sendall(PREFACE)
    reply = b""
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                break
            reply += data
    except (socket.timeout, ConnectionResetError, ssl.SSLError):
        pass
    sock.close()
    preface = reply.split(b"\r\n", 1)[0].decode("latin-1") or "closed"
    outcomes["h2 preface after http/1.1"] = preface
    passed = outcomes["h2"] == "h2" and outcomes["http/1.1"] == "http/1.1" and outcomes["h2,http/1.1"] == "h2" \
        and (outcomes["foo"].startswith("alert") or outcomes["foo"] in ("none", "http/1.1")) \
        and (preface.startswith("HTTP/1.1 400") or preface.startswith("HTTP/1.1 505") or preface == "closed")
    result("H2-17", passed, "; ".join(f"{k}: {v}" for k, v in outcomes.items()))


CASES = {"H2-01": h2_01, "H2-02": h2_02, "H2-03": h2_03, "H2-04": h2_04, "H2-05": h2_05, "H2-06": h2_06,
         "H2-07": h2_07, "H2-08": h2_08, "H2-09": h2_09, "H2-10": h2_10, "H2-11": h2_11, "H2-12": h2_12,
         "H2-13": h2_13, "H2-14": h2_14, "H2-15": h2_15, "H2-16": h2_16, "H2-17": h2_17}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls-port", type=int)
    parser.add_argument("--ca")
    parser.add_argument("--prefix", default="/up")
    parser.add_argument("--stub", default="/stub")
    parser.add_argument("--big-mb", type=int, default=64)
    parser.add_argument("--max-requests", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=0, help="H2-10: seconds to hold the stalled stream open")
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    for name in args.cases or [c for c in CASES if c != "H2-10"]:
        try:
            CASES[name](args)
        except Exception as error:  # a crash of the suite is a failed case, with the reason
            result(name, False, f"suite error: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
