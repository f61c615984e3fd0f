#!/usr/bin/python3
"""Hostile and edge-case HTTP/2 clients for HTTPServerCoreTests (Debian's python3-h2).

Usage: h2probe.py PORT MODE [ARG]
  malformed       uppercase header name and a `connection` header on two streams; prints "RST <name> <code>" for
                  each reset, then a normal request on the same connection: "OK <status> <body>".
  rapid-reset ID  1000 HEADERS+RST_STREAM pairs for /cancel-probe?id=ID in one burst; prints what the server did
                  ("GOAWAY <code>", "CLOSED", "QUIET"), then "OK <status> <body>" for /hello on a new connection.
  refuse ID       100 streams to /stubborn?id=ID (handlers that ignore cancellation), all reset after 300 ms, then 20
                  /hello streams at once: prints "REFUSED <n>" and "ANSWERED <n>"; then after 1.2 s
                  "OK <status> <body>" for /hello on the same connection.
  cancel ID       GET /cancel-probe?id=ID, RST_STREAM(CANCEL) after 50 ms, then polls /cancel-probe-result?id=ID on
                  the same connection; prints "RESULT <state> <elapsed ms>".
  sequence PATH N N GETs of PATH one after another on one connection; prints "BODY <body>" for each.
  early PATH      a POST of PATH whose body (no length given) is still being sent when the answer comes: 16 KiB, then
                  waits; prints "RESPONSE <status> <body>" and what ended the upload ("RST <code>", or "OPEN" when the
                  server left the stream open for more body).
  early-declared PATH N  a POST of PATH declaring N body bytes and sending none until the answer: prints
                  "RESPONSE <status> <body>", then "RST <code>" or "QUIET" for what the server did in the next 300 ms,
                  then sends the N bytes with END_STREAM and prints "DONE" once the stream is closed cleanly, or
                  what happened instead. With a fifth argument `stall`, sends nothing more and prints "RST <code>" or
                  "OPEN" for what the server did within 2 s.
  tunnel PATH PROTO  an extended CONNECT (RFC 8441, `:protocol PROTO`) to PATH: prints "SETTING <n>" (the server's
                  SETTINGS_ENABLE_CONNECT_PROTOCOL), then "RESPONSE <status> <body>" or "RST <code>"; after a 200 sends
                  "ping-1", then 300 KiB, waits 1 s, then "ping-2", printing "ECHO <bytes echoed> <intact>", then ends
                  its side and prints "END STREAM" (the server ended too), "RST <code>" or "OPEN".
  drain PATH      raw frames: a GET of PATH, during which the Swift test shuts the server down; reads until the
                  server ends its side, printing "RESPONSE <status> <body>", "GOAWAY <last stream ids>" and "EOF", then
                  goes on sending as a client that has not read the GOAWAY yet would (a PING every 20 ms for 200 ms)
                  and prints "SENT" or "RESET <errno>" when a send failed: the server closed instead of lingering.
Exit status 0 when the script ran to the end (the Swift test checks the printed results).
"""
import errno
import socket
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.exceptions
import h2.events
import h2.settings


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                       validate_outbound_headers=False, normalize_outbound_headers=False,
                                       validate_inbound_headers=False)
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def pump(sock, conn, until, timeout=5.0):
    """Reads and answers frames until `until(events)` is true, the peer closes or `timeout` passes."""
    deadline = time.time() + timeout
    events = []
    while time.time() < deadline:
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            data = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            events.append("closed")
            break
        if not data:
            events.append("closed")
            break
        try:
            events.extend(conn.receive_data(data))
        except h2.exceptions.ProtocolError as error:
            events.append("protocol-error %s" % error)
            break
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
        if until(events):
            break
    return events


def request_headers(path, method="GET", extra=()):
    return [(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path)] + list(extra)


def get(sock, conn, path, timeout=5.0):
    """A GET on a new stream; returns (status, body) or (None, events)."""
    stream_id = conn.get_next_available_stream_id()
    conn.send_headers(stream_id, request_headers(path), end_stream=True)
    sock.sendall(conn.data_to_send())
    status, body = None, b""

    def done(events):
        return any(isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)) and e.stream_id == stream_id
                   for e in events if not isinstance(e, str))

    events = pump(sock, conn, done, timeout)
    for event in events:
        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
            status = dict(event.headers).get(":status")
        elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
            body += event.data
            conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
    out = conn.data_to_send()
    if out:
        sock.sendall(out)
    return status, body.decode("utf-8", "replace")


def malformed(port):
    sock, conn = connect(port)
    cases = {
        "uppercase": request_headers("/hello", extra=[("X-Upper", "1")]),
        "connection": request_headers("/hello", extra=[("connection", "keep-alive")]),
    }
    ids = {}
    for name, headers in cases.items():
        stream_id = conn.get_next_available_stream_id()
        ids[stream_id] = name
        conn.send_headers(stream_id, headers, end_stream=True)
    sock.sendall(conn.data_to_send())

    def all_reset(events):
        resets = {e.stream_id for e in events if isinstance(e, h2.events.StreamReset)}
        return set(ids) <= resets

    for event in pump(sock, conn, all_reset):
        if isinstance(event, h2.events.StreamReset) and event.stream_id in ids:
            print("RST %s %s" % (ids[event.stream_id], h2.errors.ErrorCodes(event.error_code).name))
        elif isinstance(event, h2.events.ResponseReceived) and event.stream_id in ids:
            print("RESPONSE %s %s" % (ids[event.stream_id], dict(event.headers).get(":status")))
    status, body = get(sock, conn, "/hello")
    print("OK %s %s" % (status, body))


def rapid_reset(port, probe_id):
    sock, conn = connect(port)
    pump(sock, conn, lambda events: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events), 2)
    burst = bytearray()
    for _ in range(1000):
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, request_headers("/cancel-probe?id=%s" % probe_id), end_stream=True)
        conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        burst += conn.data_to_send()
    try:
        sock.sendall(bytes(burst))
    except (BrokenPipeError, ConnectionResetError):
        pass
    events = pump(sock, conn, lambda events: any(
        not isinstance(e, str) and isinstance(e, h2.events.ConnectionTerminated) or e == "closed" for e in events), 2)
    verdict = "QUIET"
    for event in events:
        if isinstance(event, h2.events.ConnectionTerminated):
            verdict = "GOAWAY %s" % h2.errors.ErrorCodes(event.error_code).name
            break
        if event == "closed":
            verdict = "CLOSED"
    print(verdict)
    sock.close()
    fresh, fresh_conn = connect(port)
    status, body = get(fresh, fresh_conn, "/hello")
    print("OK %s %s" % (status, body))


def refuse(port, probe_id):
    sock, conn = connect(port)
    pump(sock, conn, lambda events: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events), 2)
    stubborn = []
    for _ in range(100):
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, request_headers("/stubborn?id=%s" % probe_id), end_stream=True)
        stubborn.append(stream_id)
    sock.sendall(conn.data_to_send())
    pump(sock, conn, lambda events: False, 0.3)
    for stream_id in stubborn:
        conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
    sock.sendall(conn.data_to_send())
    pump(sock, conn, lambda events: False, 0.05)
    hellos = set()
    for _ in range(20):
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, request_headers("/hello"), end_stream=True)
        hellos.add(stream_id)
    sock.sendall(conn.data_to_send())

    def settled(events):
        done = {e.stream_id for e in events if isinstance(e, (h2.events.StreamReset, h2.events.StreamEnded))}
        return hellos <= done

    refused = answered = 0
    for event in pump(sock, conn, settled, 3):
        if isinstance(event, h2.events.StreamReset) and event.stream_id in hellos:
            if event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM:
                refused += 1
        elif isinstance(event, h2.events.StreamEnded) and event.stream_id in hellos:
            answered += 1
    print("REFUSED %d" % refused)
    print("ANSWERED %d" % answered)
    pump(sock, conn, lambda events: False, 1.2)
    status, body = get(sock, conn, "/hello")
    print("OK %s %s" % (status, body))


def cancel(port, probe_id):
    sock, conn = connect(port)
    started = time.time()
    stream_id = conn.get_next_available_stream_id()
    conn.send_headers(stream_id, request_headers("/cancel-probe?id=%s" % probe_id), end_stream=True)
    sock.sendall(conn.data_to_send())
    pump(sock, conn, lambda events: False, 0.05)
    conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
    sock.sendall(conn.data_to_send())
    state = "unknown"
    while time.time() - started < 4:
        status, body = get(sock, conn, "/cancel-probe-result?id=%s" % probe_id)
        state = body
        if body not in ("", "unknown", "started"):
            break
        time.sleep(0.02)
    print("RESULT %s %d" % (state, int((time.time() - started) * 1000)))


def sequence(port, path, count):
    sock, conn = connect(port)
    for _ in range(count):
        status, body = get(sock, conn, path)
        print("BODY %s" % body)


def early(port, path):
    sock, conn = connect(port)
    stream_id = conn.get_next_available_stream_id()
    conn.send_headers(stream_id, request_headers(path, method="POST"), end_stream=False)
    conn.send_data(stream_id, b"x" * 16384, end_stream=False)
    sock.sendall(conn.data_to_send())

    def reset(events):
        return any(isinstance(e, h2.events.StreamReset) and e.stream_id == stream_id for e in events if not isinstance(e, str))

    events = pump(sock, conn, reset, timeout=3.0)
    status, body, ended = None, b"", "OPEN"
    for event in events:
        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
            status = dict(event.headers).get(":status")
        elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
            body += event.data
        elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream_id:
            ended = "RST %d" % event.error_code
    print("RESPONSE %s %s" % (status, body.decode("utf-8", "replace")))
    print(ended)


class StreamWatch:
    """What the server sent on one stream (status, body, END_STREAM, RST_STREAM code, the connection closing), its
    DATA acknowledged as it comes."""

    def __init__(self, sock, conn, stream_id):
        self.sock, self.conn, self.stream_id = sock, conn, stream_id
        self.status, self.body, self.ended, self.reset, self.closed = None, b"", False, None, None

    def absorb(self, events):
        for event in events:
            if isinstance(event, str):
                self.closed = self.closed or event.upper()
            elif getattr(event, "stream_id", None) != self.stream_id:
                continue
            elif isinstance(event, h2.events.ResponseReceived):
                self.status = dict(event.headers).get(":status")
            elif isinstance(event, h2.events.DataReceived):
                self.body += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, self.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.ended = True
            elif isinstance(event, h2.events.StreamReset):
                self.reset = event.error_code
        events.clear()
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def wait_for(self, condition, timeout=5.0):
        """Reads until `condition()` holds (at once if it already does) or `timeout` passes."""
        if not condition():
            pump(self.sock, self.conn, lambda events: self.absorb(events) or condition(), timeout)

    @property
    def over(self):
        return self.ended or self.reset is not None or self.closed is not None

    @property
    def outcome(self):
        """How the stream ended: "STREAM", "RST <code>", "CLOSED" (the connection), or None while open."""
        if self.reset is not None:
            return "RST %d" % self.reset
        return "STREAM" if self.ended else self.closed


def send_all(watch, data, end_stream=False):
    """Sends `data` on the watched stream as flow control allows, reading the server meanwhile."""
    sent = 0
    while sent < len(data):
        window = min(watch.conn.local_flow_control_window(watch.stream_id), watch.conn.max_outbound_frame_size,
                     len(data) - sent)
        if window <= 0:
            before = watch.conn.local_flow_control_window(watch.stream_id)
            watch.wait_for(lambda: watch.conn.local_flow_control_window(watch.stream_id) > before or watch.over)
            if watch.over:
                return
            continue
        last = sent + window == len(data)
        watch.conn.send_data(watch.stream_id, data[sent:sent + window], end_stream=end_stream and last)
        watch.sock.sendall(watch.conn.data_to_send())
        sent += window


def early_declared(port, path, count, stall=False):
    sock, conn = connect(port)
    stream_id = conn.get_next_available_stream_id()
    conn.send_headers(stream_id, request_headers(path, method="POST", extra=[("content-length", str(count))]))
    sock.sendall(conn.data_to_send())
    watch = StreamWatch(sock, conn, stream_id)
    watch.wait_for(lambda: watch.over)
    print("RESPONSE %s %s" % (watch.status, watch.body.decode("utf-8", "replace")))
    watch.wait_for(lambda: watch.reset is not None, timeout=0.3)
    print("QUIET" if watch.reset is None else "RST %d" % watch.reset)
    if watch.reset is not None:
        return
    if stall:
        watch.wait_for(lambda: watch.reset is not None, timeout=2)
        print("OPEN" if watch.reset is None else "RST %d" % watch.reset)
        return
    send_all(watch, b"x" * count, end_stream=True)
    watch.wait_for(lambda: watch.reset is not None, timeout=0.5)
    status, body = get(sock, conn, "/hello")
    print("DONE" if watch.reset is None and status == "200" else "RST %s, then %s" % (watch.reset, status))


def tunnel(port, path, protocol):
    sock, conn = connect(port)
    pump(sock, conn, lambda events: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events))
    print("SETTING %d" % conn.remote_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL, 0))
    stream_id = conn.get_next_available_stream_id()
    conn.send_headers(stream_id, [(":method", "CONNECT"), (":protocol", protocol), (":scheme", "http"),
                                  (":authority", "localhost"), (":path", path)])
    sock.sendall(conn.data_to_send())
    watch = StreamWatch(sock, conn, stream_id)
    watch.wait_for(lambda: watch.status is not None or watch.over)
    if watch.status != "200":
        if watch.status is not None:
            watch.wait_for(lambda: watch.over, timeout=2)
            print("RESPONSE %s %s" % (watch.status, watch.body.decode("utf-8", "replace")))
        else:
            print(watch.outcome)
        return
    print("RESPONSE 200")
    payload = b"ping-1" + bytes((i * 31) & 0xFF for i in range(300 * 1024))
    send_all(watch, payload)
    watch.wait_for(lambda: len(watch.body) >= len(payload))
    time.sleep(1)
    conn.send_data(stream_id, b"ping-2")
    sock.sendall(conn.data_to_send())
    expected = payload + b"ping-2"
    watch.wait_for(lambda: len(watch.body) >= len(expected))
    print("ECHO %d %s" % (len(watch.body), watch.body == expected))
    conn.end_stream(stream_id)
    sock.sendall(conn.data_to_send())
    watch.wait_for(lambda: watch.over, timeout=3)
    print(watch.outcome or "OPEN")


def drain(port, path):
    from hpack import Decoder, Encoder
    from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame, SettingsFrame
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    block = Encoder().encode(request_headers(path))
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize()
                 + HeadersFrame(1, data=block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    decoder, buf, status, body, goaways = Decoder(), bytearray(), None, b"", []
    deadline = time.time() + 5
    while time.time() < deadline:
        data = sock.recv(65536)
        if not data:
            break
        buf += data
        while len(buf) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(bytes(buf[:9])))
            if len(buf) < 9 + length:
                break
            frame.parse_body(memoryview(bytes(buf[9:9 + length])))
            del buf[:9 + length]
            if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                sock.sendall(SettingsFrame(0, flags=["ACK"]).serialize())
            elif isinstance(frame, HeadersFrame) and frame.stream_id == 1:
                status = dict(decoder.decode(frame.data)).get(":status")
            elif isinstance(frame, DataFrame) and frame.stream_id == 1:
                body += frame.data
            elif isinstance(frame, GoAwayFrame):
                goaways.append(str(frame.last_stream_id))
    print("RESPONSE %s %s" % (status, body.decode("utf-8", "replace")))
    print("GOAWAY %s" % " ".join(goaways))
    print("EOF" if time.time() < deadline else "OPEN")
    try:
        for _ in range(10):
            sock.sendall(PingFrame(0, opaque_data=b"lingered").serialize())
            time.sleep(0.02)
        print("SENT")
    except OSError as error:
        print("RESET %s" % errno.errorcode.get(error.errno, error.errno))
    sock.close()


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "malformed":
        malformed(port)
    elif mode == "rapid-reset":
        rapid_reset(port, sys.argv[3])
    elif mode == "refuse":
        refuse(port, sys.argv[3])
    elif mode == "cancel":
        cancel(port, sys.argv[3])
    elif mode == "early":
        early(port, sys.argv[3])
    elif mode == "early-declared":
        early_declared(port, sys.argv[3], int(sys.argv[4]), stall=len(sys.argv) > 5 and sys.argv[5] == "stall")
    elif mode == "tunnel":
        tunnel(port, sys.argv[3], sys.argv[4])
    elif mode == "drain":
        drain(port, sys.argv[3])
    elif mode == "sequence":
        sequence(port, sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit("unknown mode %s" % mode)


if __name__ == "__main__":
    main()
