#!/usr/bin/python3
"""The "nothing lost" harness of docs/reliability.md §4 (LIFE-01, -03, -04, -05, -06 of §2.10).

Run with Debian's /usr/bin/python3 (it needs h11, hpack and hyperframe from python3-h2). Two modes:

  nothing_lost.py upstream --port P --log FILE [--delay 0.5]
      The echo upstream (HTTP/1.1, a thread per connection, SO_REUSEADDR so a kill -9 and a restart on the same port
      work). It appends `start PID T`, `recv ID T PID`, `sent ID T PID` (after the last response byte was written) and
      `abort ID T PID` (the peer closed before the answer) lines to FILE, unbuffered, so nothing is lost at a kill -9.
      It answers after the delay (`?delay=MS` overrides it) with the request's id in the body and in `X-Echo-Id`;
      `?size=N` pads the body to N bytes.

  nothing_lost.py run --gateway BIN --event EVENT [--proto h1|h2|mix] [--workers 20] [--duration 5] [--event-at 2]
      Starts the echo upstream and the proxy (the real `moya-gateway` at BIN with a config it writes, or nginx with
      `--proxy nginx`), runs the load, injects EVENT at --event-at, classifies every request id as §4.2 says and
      prints one JSON summary line on stdout. Exit status 0 when every pass criterion of its scenario holds, 1 when
      one fails, 2 on a usage or set-up error, 3 at the hard deadline. EVENT is one of:
        term            SIGTERM to the proxy (LIFE-01 with h1, LIFE-06 with h2)
        quit            SIGQUIT (nginx's graceful shutdown, for calibration)
        reload-good     a valid new config (a second route, /v2) then SIGHUP (LIFE-03)
        reload-bad      an invalid config then SIGHUP (LIFE-04)
        upstream-restart  kill -9 of the echo upstream, restarted on the same port --down seconds later (LIFE-05)
        upstream-goaway   (with --upstream-h2) the h2c upstream sends GOAWAY NO_ERROR on every connection, 100 ms
                        after fixing its last-stream-id, answers the streams up to it and closes; streams above it are
                        never processed (they must be retried: no request may fail)
        kill            kill -9 of the proxy itself (the at-most-once boundary: reported, never failed)
        none            no event
      The load: --workers requests in flight, half on HTTP/1.1 (keep-alive connections with --think idle time between
      requests, and one-shot connections), half on h2c streams (--streams per connection) with --proto mix; every
      other request a POST whose body carries its id, every tenth GET a 300 KB (relayed) answer, starts staggered
      over one upstream delay. --h2-race keeps an h2 client opening streams for 300 ms after the GOAWAY shutdown
      notice (LIFE-06's streams above the last-stream-id); --slow-readers N adds clients reading a 12 MiB relayed
      body at 4 MiB/s across the event; --upstream-faults makes the upstream misroute and silently truncate some
      answers (a self-check of the classifier); --proxy nginx runs the same load against nginx (calibration).
      --threads N sets the gateway's server.threads (default 2: several loops, SO_REUSEPORT listeners).
      --coalesce gives the route `coalesce: true` and sends every worker's GETs and POSTs to shared URLs (one per half
      upstream delay and size) with one of two identities (Authorization, echoed by the upstream as a hash in
      X-Echo-Auth): a GET may then carry its flight leader's id, accepted only when the leader is a request of this
      run for the same URL and identity that the upstream received, asked no later than 0.2 s after the leader's
      answer was sent (else MISROUTED, or STALE_SHARE); POSTs must get their own answer (COAL-03).
      --upstream-h2 makes the echo upstream speak h2c (the `h2` library; a timer per stream, bodies under flow
      control) and gives the gateway's upstream `pool: { http2: always }`.
      --idle-close T [--idle-race W] (UP-10): the upstream closes keep-alive connections idle T seconds, and a
      request arriving in the last W seconds of that is closed unread (a RST: the request crossed the close);
      with --think T --think-spread S clients reuse connections right at the expiry. No GET may fail; a POST may
      get 502, never be received twice.

Classification of each request id (client outcome + upstream log + access log):
  ok          2xx whose body is exactly the echo of its own id, method, request body and size
  MISROUTED   a response carrying another id (body or X-Echo-Id)
  TRUNC       a response the client took as complete whose body is not the expected one (silent truncation)
  LOST        the client got no good response but the upstream saw the id and sent its answer; or the upstream saw it
              and the client got no HTTP response at all (a silent close with the request in flight)
  DROPPED     the client got no HTTP response, the upstream never saw the id, and the failure is not one of the
              "not processed" signals below (§4.1 invariant 1: a silent close with a request in flight is a loss)
  retryable   the client got no HTTP response, the upstream never saw the id, and the failure is an explicit "not
              processed" signal: connection refused; an h2 stream above the GOAWAY last-stream-id or refused with
              REFUSED_STREAM; a close (or reset) with no response byte of a reused keep-alive connection (idle close)
              or of a fresh connection the proxy never took (reset in the listen backlog), neither in the access log
  DUP         the upstream received the id more than once (a POST; or a GET received again after a response to it
              had been sent). A GET received again after the upstream died without answering is `retried_get`.
  LOG_MISSING an ok id without an access-log line; LOG_EXTRA: a second line for an id, or a line for an id never sent

Every loop is bounded, traffic goes to 127.0.0.1 only, and every child process is killed on exit (and when the
harness dies: PR_SET_PDEATHSIG).
"""
import argparse
import collections
import ctypes
import hashlib
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import h11

LOOPBACK = "127.0.0.1"


# ---------------------------------------------------------------------------------------------------------------------
# The echo body: both sides compute it, so the client can tell its own answer, another id's and a cut one apart.

def pad(rid, size):
    unit = (rid + ".").encode()
    return (unit * (size // len(unit) + 1))[:size]


def echo_body(rid, method, path, request_body, size):
    head = "%s %s %s\nsha=%s\n" % (rid, method, path, hashlib.sha256(request_body).hexdigest()[:16])
    return head.encode() + pad(rid, size)


# ---------------------------------------------------------------------------------------------------------------------
# Echo upstream

class UpstreamLog:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.pid = os.getpid()

    def write(self, kind, rid):
        os.write(self.fd, ("%s %s %.6f %d\n" % (kind, rid, time.time(), self.pid)).encode())


FAULT_LOCK = threading.Lock()
FAULT_COUNT = [0]


def auth_tag(value):
    """What the upstream echoes of the Authorization it got (X-Echo-Auth), so a client can check the identity."""
    return hashlib.sha256(value.encode()).hexdigest()[:12] if value else "-"


def upstream_connection(sock, log, default_delay, faults=False, idle_close=0.0, idle_race=0.0):
    conn = h11.Connection(h11.SERVER)
    sock.settimeout(60)
    try:
        first = True
        while True:
            request, body = None, bytearray()
            if idle_close > 0 and not first and not conn.trailing_data[0]:
                # UP-10: a keep-alive connection idle for idle_close seconds is closed (as nginx's keepalive_timeout
                # does: a request arriving after the timer fired is not read; a close with unread bytes is a RST).
                idle_from = time.monotonic()
                readable, _, _ = select.select([sock], [], [], idle_close)
                if not readable:
                    log.write("idle", "-")
                    return
                if idle_race > 0 and time.monotonic() - idle_from >= idle_close - idle_race:
                    # --idle-race: a request that arrived in the last idle_race seconds before the timer is taken as
                    # having crossed the close on the wire: closed unread (a RST to the peer), never processed.
                    log.write("idle", "-")
                    log.write("idle_unread", "-")
                    return
            first = False
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(sock.recv(65536))
                    continue
                if isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    return
            headers = {k.decode().lower(): v.decode() for k, v in request.headers}
            rid = headers.get("x-request-id", "-")
            target = urllib.parse.urlsplit(request.target.decode())
            query = dict(urllib.parse.parse_qsl(target.query))
            log.write("recv", rid)
            delay = int(query["delay"]) / 1000.0 if "delay" in query else default_delay
            size = int(query.get("size", "512"))
            # Wait, watching for the peer giving the request up (EOF) meanwhile.
            deadline = time.monotonic() + delay
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                readable, _, _ = select.select([sock], [], [], left)
                if readable:
                    try:
                        peek = sock.recv(1, socket.MSG_PEEK)
                    except OSError:
                        peek = b""
                    if not peek:
                        log.write("abort", rid)
                        return
                    time.sleep(max(0.0, deadline - time.monotonic()))
                    break
            method = request.method.decode()
            payload = echo_body(rid, method, target.path, bytes(body), size)
            if faults:
                # Self-check of the classifier: some answers carry another id, some are silently short (by
                # arrival order, so every run has both).
                with FAULT_LOCK:
                    FAULT_COUNT[0] += 1
                    pick = FAULT_COUNT[0] % 12
                if pick == 0:
                    payload = echo_body(rid + "x", method, target.path, bytes(body), size)
                elif pick == 1:
                    payload = payload[:-10]
            out = conn.send(h11.Response(status_code=200, headers=[
                ("Content-Type", "text/plain"), ("Content-Length", str(len(payload))), ("X-Echo-Id", rid),
                ("X-Echo-Auth", auth_tag(headers.get("authorization", "")))]))
            out += conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage())
            try:
                sock.sendall(out)
            except OSError:
                log.write("abort", rid)
                return
            log.write("sent", rid)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()
    except (OSError, h11.ProtocolError):
        return
    finally:
        try:
            sock.close()
        except OSError:
            pass


GOAWAY = {"at": None}  # set by SIGUSR1 in the h2c upstream: a graceful shutdown of every connection open then


def h2_upstream_connection(sock, log, default_delay, faults=False, goaway_lag=0.0):
    """The echo upstream over h2c with prior knowledge: every stream answered after its delay (a timer per stream, so
    streams of one connection overlap), its body sent as the peer's windows allow. `sent` is logged once the last
    DATA frame of the stream was written to the socket; `abort` when the peer reset the stream or closed the
    connection before the answer was complete. After SIGUSR1 (the `upstream-goaway` event) a connection open then
    sends GOAWAY (NO_ERROR) whose last-stream-id is the highest stream it had received when the signal came, goaway_lag
    seconds later (a GOAWAY crossing new streams on the wire): it answers the streams up to that id, never processes
    those above it (logged `ignored ID`; RFC 9113 §8.7: not processed, safe to retry for any method), then closes."""
    import heapq

    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import h2.settings

    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.local_settings = h2.settings.Settings(client=False, initial_values={
        h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000, h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
    conn.initiate_connection()
    conn.increment_flow_control_window(1 << 30)
    streams = {}   # sid -> state
    timers = []    # (due, sid)
    sending = []   # sids whose answer is due, in order
    accepted_at = time.monotonic()
    max_received = 0
    last_id = None     # the GOAWAY's last-stream-id, once decided
    goaway_sent = False
    try:
        sock.sendall(conn.data_to_send())
        while True:
            now = time.monotonic()
            while timers and timers[0][0] <= now:
                _, sid = heapq.heappop(timers)
                st = streams.get(sid)
                if st is None:
                    continue
                rid = st["rid"]
                payload = echo_body(rid, "GET" if st["method"] == "GET" else st["method"], st["path"], bytes(st["body"]),
                                    st["size"])
                st["payload"], st["offset"] = payload, 0
                conn.send_headers(sid, [(":status", "200"), ("content-type", "text/plain"),
                                        ("content-length", str(len(payload))), ("x-echo-id", rid),
                                        ("x-echo-auth", auth_tag(st["auth"]))])
                sending.append(sid)
            done = []
            for sid in list(sending):
                st = streams[sid]
                while st["offset"] < len(st["payload"]):
                    window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                    if window <= 0:
                        break
                    chunk = st["payload"][st["offset"]:st["offset"] + window]
                    st["offset"] += len(chunk)
                    conn.send_data(sid, chunk, end_stream=st["offset"] >= len(st["payload"]))
                if st["offset"] >= len(st["payload"]):
                    sending.remove(sid)
                    done.append(sid)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
            for sid in done:
                log.write("sent", streams.pop(sid)["rid"])
            signalled = GOAWAY["at"]
            if signalled is not None and accepted_at < signalled:
                if last_id is None:
                    last_id = max_received
                if not goaway_sent and time.monotonic() >= signalled + goaway_lag:
                    from hyperframe.frame import GoAwayFrame
                    sock.sendall(conn.data_to_send() + GoAwayFrame(0, last_stream_id=last_id, error_code=0).serialize())
                    goaway_sent = True
                    log.write("goaway", str(last_id))
                if goaway_sent and not any(sid <= last_id for sid in streams):
                    break
            wait = 1.0 if not timers else max(0.0, timers[0][0] - time.monotonic())
            if signalled is not None and accepted_at < signalled:
                wait = min(wait, 0.01)
            readable, _, _ = select.select([sock], [], [], wait)
            if not readable:
                continue
            data = sock.recv(1 << 20)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    headers = dict(event.headers)
                    target = urllib.parse.urlsplit(headers.get(":path", "/"))
                    query = dict(urllib.parse.parse_qsl(target.query))
                    streams[event.stream_id] = {
                        "rid": headers.get("x-request-id", "-"), "method": headers.get(":method", "GET"),
                        "path": target.path, "size": int(query.get("size", "512")), "body": bytearray(),
                        "auth": headers.get("authorization", ""),
                        "delay": int(query["delay"]) / 1000.0 if "delay" in query else default_delay}
                elif isinstance(event, h2.events.DataReceived):
                    st = streams.get(event.stream_id)
                    if st is not None:
                        st["body"] += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    st = streams.get(event.stream_id)
                    if st is not None and last_id is not None and event.stream_id > last_id:
                        log.write("ignored", st["rid"])  # above the GOAWAY's last-stream-id: never processed
                        continue
                    if st is not None:
                        max_received = max(max_received, event.stream_id)
                        log.write("recv", st["rid"])
                        st["received"] = True
                        heapq.heappush(timers, (time.monotonic() + st["delay"], event.stream_id))
                elif isinstance(event, h2.events.StreamReset):
                    st = streams.pop(event.stream_id, None)
                    if event.stream_id in sending:
                        sending.remove(event.stream_id)
                    if st is not None and st.get("received"):
                        log.write("abort", st["rid"])
                elif isinstance(event, h2.events.ConnectionTerminated):
                    raise EOFError("goaway")
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
    except (OSError, EOFError, h2.exceptions.ProtocolError):
        pass
    finally:
        for st in streams.values():
            if st.get("received"):
                log.write("abort", st["rid"])
        try:
            sock.close()
        except OSError:
            pass


def run_upstream(args):
    log = UpstreamLog(args.log)
    signal.signal(signal.SIGUSR1, lambda *_: GOAWAY.__setitem__("at", time.monotonic()))
    # A parent may have handed its signal mask down (a test runner blocking signals for its own handling).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((LOOPBACK, args.port))
    listener.listen(1024)
    os.write(log.fd, ("start %d %.6f\n" % (os.getpid(), time.time())).encode())
    print("ready", flush=True)
    deadline = time.monotonic() + args.lifetime
    listener.settimeout(0.5)
    while time.monotonic() < deadline:
        try:
            sock, _ = listener.accept()
        except socket.timeout:
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if args.h2:
            threading.Thread(target=h2_upstream_connection, args=(sock, log, args.delay, args.faults, args.goaway_lag),
                             daemon=True).start()
        else:
            threading.Thread(target=upstream_connection,
                             args=(sock, log, args.delay, args.faults, args.idle_close, args.idle_race),
                             daemon=True).start()


# ---------------------------------------------------------------------------------------------------------------------
# Child processes: killed when the harness ends, and by the kernel if the harness dies.

_libc = ctypes.CDLL(None, use_errno=True)
CHILDREN = []


def _die_with_parent():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def spawn(argv, stdout, stderr):
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                               preexec_fn=_die_with_parent, close_fds=True)
    CHILDREN.append(process)
    return process


def kill_children():
    for process in CHILDREN:
        if process.poll() is None:
            try:
                process.kill()
            except OSError:
                pass
    for process in CHILDREN:
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass


def free_port():
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_port(port, deadline, process=None):
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        try:
            socket.create_connection((LOOPBACK, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.03)
    return False


def http_get(port, path, timeout=1.0):
    """A tiny one-shot GET (admin endpoints): (status, body) or (None, error)."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as s:
            s.sendall(("GET %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" % path).encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), body.decode(errors="replace")
    except (OSError, ValueError, IndexError) as error:
        return None, str(error)


# ---------------------------------------------------------------------------------------------------------------------
# Load client

class Run:
    def __init__(self, args):
        self.args = args
        self.base = time.time()
        self.stop_at = self.base + args.duration
        self.tag = "%06x" % random.getrandbits(24)
        self.records = []
        self.lock = threading.Lock()
        self.port = None
        self.paths_h2 = {}
        self.goaways = []  # per connection: the list of GOAWAY last-stream-ids received

    def now(self):
        return time.time() - self.base

    def running(self):
        return time.time() < self.stop_at

    def add(self, record):
        with self.lock:
            self.records.append(record)


IDENTITIES = ["Bearer nl-user-a", "Bearer nl-user-b"]


def new_request(run, kind, worker, n, path_prefix="/echo"):
    rid = "nl-%s-%s%d-%d" % (run.tag, kind, worker, n)
    method = "GET" if n % 2 == 0 else "POST"
    size = 300000 if (method == "GET" and n % 10 == 4) else 512
    path = "%s/%s%d/%d?size=%d" % (path_prefix, kind, worker, n, size)
    body = ("%s:" % rid).encode() + b"p" * 200 if method == "POST" else b""
    record = {"id": rid, "kind": kind, "method": method, "path": path, "size": size, "body": body,
              "outcome": None, "status": None, "bytes": 0, "reused": False, "close": False, "t0": run.now(),
              "t1": None}
    if run.args.coalesce and kind in ("k", "n", "h") and path_prefix == "/echo":
        # One URL per time slot (half an upstream delay) and size, for GETs and POSTs of every worker alike: GETs of
        # one identity in flight together share an upstream call; POSTs never may (COAL-03), nor two identities
        # (COAL-01). The identity is the worker's (an h2 connection's streams share it).
        slot = int(run.now() / max(run.args.delay / 2, 0.05))
        record["path"] = "%s/shared/%d?size=%d" % (path_prefix, slot, size)
        record["shared"] = True
        record["auth"] = IDENTITIES[(worker // 2 + (kind == "h")) % 2]
    return record


def verify(record, status, headers, body):
    """Sets the record's outcome from a complete response."""
    record["status"] = status
    if not 200 <= status < 300:
        record["outcome"] = "http_%d" % status
        return
    first = body.split(b"\n", 1)[0].decode(errors="replace").split(" ")
    echoed = headers.get("x-echo-id")
    if record.get("shared"):
        # Identity: the upstream echoes a hash of the Authorization it got; it must be this caller's.
        if headers.get("x-echo-auth") != auth_tag(record.get("auth", "")):
            record["outcome"] = "MISROUTED"
            record["got"] = "auth %s" % headers.get("x-echo-auth")
            return
        if record["method"] == "GET" and first[0] != record["id"] and first[0].startswith("nl-") and \
                (echoed is None or echoed == first[0]):
            # A follower: the shared answer carries the leader's id; it must be exactly the leader's echo for this
            # very URL (classify checks that the leader asked for the same URL with the same identity, in time).
            want_path = urllib.parse.urlsplit(record["path"]).path
            expected = echo_body(first[0], "GET", want_path, b"", record["size"])
            record["leader"] = first[0]
            if len(first) != 3 or first[1] != "GET" or first[2] != want_path:
                record["outcome"] = "MISROUTED"
                record["got"] = " ".join(first)[:80]
                return
            record["seen_path"] = first[2]
            if body != expected:
                record["outcome"] = "TRUNC"
                record["got_len"], record["want_len"] = len(body), len(expected)
                return
            record["outcome"] = "ok"
            return
    if first[0] != record["id"] or (echoed is not None and echoed != record["id"]):
        record["outcome"] = "MISROUTED"
        record["got"] = first[0] if first[0] != record["id"] else echoed
        return
    seen_path = first[2] if len(first) > 2 else ""
    record["seen_path"] = seen_path
    expected = echo_body(record["id"], record["method"], seen_path, record["body"], record["size"])
    if body != expected or len(first) != 3 or first[1] != record["method"]:
        record["outcome"] = "TRUNC"
        record["got_len"], record["want_len"] = len(body), len(expected)
        return
    record["outcome"] = "ok"


def h1_exchange(run, sock, conn, record, timeout, rate=None):
    """One request on an open socket; returns True when the connection may be reused. `rate`: bytes per second the
    client reads at (a slow reader), else as fast as it can."""
    headers = [("Host", "nl.test"), ("X-Request-Id", record["id"])]
    if record.get("auth"):
        headers.append(("Authorization", record["auth"]))
    if record["kind"].startswith("n"):
        headers.append(("Connection", "close"))
    if record["method"] == "POST":
        headers.append(("Content-Length", str(len(record["body"]))))
    out = conn.send(h11.Request(method=record["method"], target=record["path"], headers=headers))
    if record["body"]:
        out += conn.send(h11.Data(data=record["body"]))
    out += conn.send(h11.EndOfMessage())
    deadline = time.monotonic() + timeout
    status, response_headers, body = None, {}, bytearray()
    try:
        sock.settimeout(timeout)
        sock.sendall(out)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout()
                sock.settimeout(left)
                data = sock.recv(65536)
                record["bytes"] += len(data)
                if rate:
                    time.sleep(len(data) / rate)
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                response_headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                record["close"] = response_headers.get("connection", "").lower() == "close"
            elif isinstance(event, h11.InformationalResponse):
                continue
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise h11.RemoteProtocolError("closed")
    except socket.timeout:
        record["outcome"] = "Timeout"
        return False
    except ConnectionRefusedError:
        record["outcome"] = "ConnectionRefused"
        return False
    except (ConnectionResetError, BrokenPipeError):
        record["outcome"] = "Reset" if record["bytes"] == 0 else "IncompleteRead"
        return False
    except (OSError, h11.ProtocolError) as error:
        record["outcome"] = "RemoteDisconnected" if record["bytes"] == 0 else "IncompleteRead"
        record["error"] = str(error)[:80]
        return False
    finally:
        record["t1"] = run.now()
    verify(record, status, response_headers, bytes(body))
    return conn.our_state is h11.DONE and conn.their_state is h11.DONE


def connect_failure(error):
    """The outcome of a connect that failed: refused, reset (in the listen backlog) or timed out."""
    if isinstance(error, ConnectionRefusedError):
        return "ConnectionRefused"
    if isinstance(error, ConnectionResetError):
        return "Reset"
    return "Timeout"


def h1_worker(run, worker, keepalive, port_fn, path_prefix="/echo", start_after=0.0):
    kind = "k" if keepalive else "n"
    time.sleep(start_after)
    sock, conn, n = None, None, 0
    while run.running():
        record = new_request(run, kind, worker, n, path_prefix)
        n += 1
        reused = sock is not None
        if sock is None:
            try:
                sock = socket.create_connection((LOOPBACK, port_fn()), timeout=1.0)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn = h11.Connection(h11.CLIENT)
            except OSError as error:
                record["outcome"], record["t1"], record["error"] = connect_failure(error), run.now(), str(error)[:80]
                run.add(record)
                time.sleep(0.05)
                continue
        record["reused"] = reused
        reusable = h1_exchange(run, sock, conn, record, run.args.request_timeout)
        run.add(record)
        if keepalive and reusable:
            conn.start_next_cycle()
            # Think time: keep-alive connections are sometimes idle when the event hits.
            spread = run.args.think_spread
            time.sleep(random.uniform(run.args.think * (1 - spread), run.args.think * (1 + spread)))
        else:
            sock.close()
            sock, conn = None, None
    if sock is not None:
        sock.close()


def open_h2_stream(run, sock, encoder, open_streams, record, worker, n, sid):
    """Sends one request on a new stream: (record for next time, n, next stream id, error or None)."""
    from hyperframe.frame import DataFrame, HeadersFrame
    record = new_request(run, "h", worker, n) if record is None else record
    record["stream"] = sid
    record["conn"] = len(run.goaways) - 1
    record["reused"] = sid > 1
    headers = [(":method", record["method"]), (":scheme", "http"), (":authority", "nl.test"),
               (":path", record["path"]), ("x-request-id", record["id"])]
    if record.get("auth"):
        headers.append(("authorization", record["auth"]))
    frame = HeadersFrame(sid, data=encoder.encode(headers))
    frame.flags.add("END_HEADERS")
    if record["body"]:
        out = frame.serialize() + DataFrame(sid, data=record["body"], flags=["END_STREAM"]).serialize()
    else:
        frame.flags.add("END_STREAM")
        out = frame.serialize()
    record["t0"] = run.now()
    record["_h2"] = {"deadline": time.monotonic() + run.args.request_timeout, "body": bytearray(), "headers": None}
    open_streams[sid] = record
    try:
        sock.sendall(out)
    except OSError as error:
        return None, n + 1, sid + 2, error
    return None, n + 1, sid + 2, None


def h2_connection_worker(run, worker, streams, port_fn, start_after=0.0):
    from hpack import Decoder, Encoder
    from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame,
                                  RstStreamFrame, SettingsFrame, WindowUpdateFrame)
    n = 0
    time.sleep(start_after)
    ramp_start = time.monotonic()  # the first connection opens its streams one by one over one upstream delay
    while run.running():
        record = new_request(run, "h", worker, n)
        try:
            sock = socket.create_connection((LOOPBACK, port_fn()), timeout=1.0)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as error:
            n += 1
            record["outcome"], record["t1"], record["error"] = connect_failure(error), run.now(), str(error)[:80]
            record["conn_heard"] = False
            run.add(record)
            time.sleep(0.05)
            continue
        encoder, decoder = Encoder(), Decoder()
        goaways = []
        run.goaways.append(goaways)
        open_streams = {}
        next_sid = 1
        buf = bytearray()
        block = {}
        dead = None
        try:
            sock.settimeout(2.0)
            sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                         + SettingsFrame(0, settings={SettingsFrame.INITIAL_WINDOW_SIZE: 1 << 30,
                                                      SettingsFrame.ENABLE_PUSH: 0}).serialize()
                         + WindowUpdateFrame(0, window_increment=1 << 30).serialize())
        except OSError as error:
            dead = error
        stalled = False
        heard = False  # anything at all from the server on this connection (its SETTINGS first)
        while dead is None:
            # A compliant client opens no stream after any GOAWAY; with --h2-race it goes on until the final one
            # (a last-stream-id below 2^31-1), as streams already on the wire when the server sent it would.
            final = [g for g in goaways if g != (1 << 31) - 1] if run.args.h2_race else goaways
            now_ok = run.running() and not final
            if run.args.h2_race and goaways and not final and not stalled:
                # A peer a long round trip away: for 300 ms after the shutdown notice it reads nothing (the final
                # GOAWAY waits in the socket) and opens a stream every 20 ms.
                stalled = True
                stall_until = time.monotonic() + 0.3
                while dead is None and time.monotonic() < stall_until and run.running():
                    record, n, next_sid, dead = open_h2_stream(run, sock, encoder, open_streams, record, worker, n,
                                                               next_sid)
                    time.sleep(0.02)
            ramp = (time.monotonic() - ramp_start) * streams / max(run.args.delay, 0.01)
            limit = min(streams, 1 + int(ramp))
            while dead is None and now_ok and len(open_streams) < limit:
                record, n, next_sid, dead = open_h2_stream(run, sock, encoder, open_streams, record, worker, n,
                                                           next_sid)
            if dead is not None:
                break
            if not open_streams and (final or not run.running()):
                break
            # Per-stream timeouts.
            for sid, r in list(open_streams.items()):
                if time.monotonic() > r["_h2"]["deadline"]:
                    r["outcome"], r["t1"] = "Timeout", run.now()
                    finish_h2(run, open_streams.pop(sid))
            try:
                readable, _, _ = select.select([sock], [], [], 0.05)
                if not readable:
                    continue
                data = sock.recv(1 << 20)
            except OSError as error:
                dead = error
                break
            if not data:
                dead = EOFError("eof")
                break
            buf += data
            replies = b""
            while len(buf) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(bytes(buf[:9])))
                if len(buf) < 9 + length:
                    break
                frame.parse_body(memoryview(bytes(buf[9:9 + length])))
                del buf[:9 + length]
                heard = True
                r = open_streams.get(frame.stream_id)
                if r is not None and isinstance(frame, (HeadersFrame, ContinuationFrame, DataFrame)):
                    r["bytes"] += 9 + length
                if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                    replies += SettingsFrame(0, flags=["ACK"]).serialize()
                elif isinstance(frame, PingFrame) and "ACK" not in frame.flags:
                    replies += PingFrame(0, opaque_data=frame.opaque_data, flags=["ACK"]).serialize()
                elif isinstance(frame, (HeadersFrame, ContinuationFrame)):
                    part = block.setdefault(frame.stream_id, bytearray())
                    part += frame.data
                    if isinstance(frame, HeadersFrame) and "END_STREAM" in frame.flags:
                        block.setdefault(("end", frame.stream_id), True)
                    if "END_HEADERS" in frame.flags:
                        fields = decoder.decode(bytes(block.pop(frame.stream_id)))
                        ended = block.pop(("end", frame.stream_id), False)
                        if r is not None:
                            if r["_h2"]["headers"] is None:
                                r["_h2"]["headers"] = {k.lower(): v for k, v in fields}
                            if ended:
                                complete_h2(run, open_streams.pop(frame.stream_id))
                elif isinstance(frame, DataFrame):
                    if frame.flow_controlled_length:
                        replies += WindowUpdateFrame(0, window_increment=frame.flow_controlled_length).serialize()
                    if r is not None:
                        r["_h2"]["body"] += frame.data
                        if "END_STREAM" in frame.flags:
                            complete_h2(run, open_streams.pop(frame.stream_id))
                elif isinstance(frame, RstStreamFrame):
                    if r is not None:
                        r["outcome"] = "RefusedStream" if frame.error_code == 7 else "StreamReset"
                        r["error"] = "RST_STREAM %d" % frame.error_code
                        r["t1"] = run.now()
                        finish_h2(run, open_streams.pop(frame.stream_id))
                elif isinstance(frame, GoAwayFrame):
                    goaways.append(frame.last_stream_id)
                    for sid in [s for s in open_streams if s > frame.last_stream_id]:
                        r = open_streams.pop(sid)
                        r["outcome"], r["t1"] = "GOAWAY-unprocessed", run.now()
                        r["goaway_last"] = frame.last_stream_id
                        finish_h2(run, r)
            if replies:
                try:
                    sock.sendall(replies)
                except OSError as error:
                    dead = error
                    break
        for sid, r in list(open_streams.items()):
            r["outcome"] = "RemoteDisconnected" if r["_h2"]["headers"] is None and not r["_h2"]["body"] \
                else "IncompleteRead"
            r["error"] = str(dead)[:80]
            r["t1"] = run.now()
            r["conn_heard"] = heard
            finish_h2(run, r)
        # A record made for this connection and never sent (record is not None) is dropped: it was never a request.
        try:
            sock.close()
        except OSError:
            pass
        record = None


def finish_h2(run, record):
    record.pop("_h2", None)
    run.add(record)


def complete_h2(run, record):
    state = record["_h2"]
    record["t1"] = run.now()
    headers = state["headers"] or {}
    try:
        status = int(headers.get(":status", "0"))
    except ValueError:
        status = 0
    body = bytes(state["body"])
    if "content-length" in headers and headers["content-length"].isdigit() and int(headers["content-length"]) != len(body):
        record["cl_mismatch"] = True
    verify(record, status, headers, body)
    finish_h2(run, record)


def slow_reader_worker(run, worker, port_fn, start_after):
    """Asks for a 12 MiB body (no upstream delay) on a fresh connection with a small receive buffer and reads it at
    4 MiB/s: a relayed body flows for about 3 s (the kernel's socket buffers cannot absorb it), from 1 s before the
    event to well after the requests in flight at the event have finished, whatever the event does meanwhile."""
    time.sleep(start_after)
    n = 0
    while run.running() and run.stop_at - time.time() > 3.5:
        record = new_request(run, "s", worker, n)
        record["method"], record["body"], record["size"] = "GET", b"", 12 << 20
        record["path"] = "/echo/s%d/%d?size=%d&delay=0" % (worker, n, record["size"])
        n += 1
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
            sock.settimeout(1.0)
            sock.connect((LOOPBACK, port_fn()))
        except OSError as error:
            sock.close()
            record["outcome"], record["t1"], record["error"] = connect_failure(error), run.now(), str(error)[:80]
            run.add(record)
            time.sleep(0.05)
            continue
        h1_exchange(run, sock, h11.Connection(h11.CLIENT), record, run.args.request_timeout + 3, rate=4 << 20)
        sock.close()
        run.add(record)


def probe_worker(run, port_fn, results):
    """LIFE-03: asks for the route the reload adds, every 50 ms (no upstream delay)."""
    n = 0
    while run.running():
        record = new_request(run, "p", 0, n, "/v2")
        record["method"], record["body"] = "GET", b""
        record["size"], record["path"] = 64, "/v2/probe/%d?size=64&delay=0" % n
        n += 1
        try:
            sock = socket.create_connection((LOOPBACK, port_fn()), timeout=1.0)
            h1_exchange(run, sock, h11.Connection(h11.CLIENT), record, 2.0)
            sock.close()
        except OSError:
            record["outcome"], record["t1"] = "ConnectionRefused", run.now()
        results.append(record)
        run.add(record)
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------------------------------
# Proxies under test

GATEWAY_CONFIG = """\
server:
  listen: ["127.0.0.1:{port}"]
  threads: {threads}
  http2: true
  limits: {{ drain_timeout: {drain}s }}
admin:
  listen: "127.0.0.1:{admin}"
logging:
  level: info
  access_log: true
upstreams:
  echo: {{ base_url: "http://127.0.0.1:{upstream}", timeout: {{ connect: 1s, response: 3s }}{pool} }}
routes:
  - {{ name: echo, match: {{ path_prefix: /echo }}, upstream: echo{route_extra} }}
"""

GOOD_RELOAD = "  - { name: v2, match: { path_prefix: /v2 }, upstream: echo, rewrite: { strip_prefix: /v2, add_prefix: /via-v2 } }\n"
BAD_RELOAD = "  - { name: v2, match: { path_prefix: /v2 }, upstream: missing }\n"

NGINX_CONFIG = """\
worker_processes 1;
user root root;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 1024; }}
http {{
  log_format nl escape=json '{{"msg":"access","request_id":"$http_x_request_id","status":$status,"path":"$request_uri"}}';
  access_log {dir}/access.log nl;
  client_body_temp_path {dir}/tmp/body; proxy_temp_path {dir}/tmp/proxy; fastcgi_temp_path {dir}/tmp/fcgi;
  uwsgi_temp_path {dir}/tmp/uwsgi; scgi_temp_path {dir}/tmp/scgi;
  upstream echo {{ server 127.0.0.1:{upstream}; keepalive 32; }}
  server {{
    listen 127.0.0.1:{port}{http2};
    location / {{
      proxy_pass http://echo;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_read_timeout 3s;
    }}
  }}
}}
"""


class Proxy:
    def __init__(self, args, directory, upstream_port):
        self.args, self.dir = args, directory
        self.port, self.admin = free_port(), free_port()
        self.upstream_port = upstream_port
        self.process = None
        self.out = os.path.join(directory, "proxy.out")
        self.err = os.path.join(directory, "proxy.err")
        self.config = os.path.join(directory, "gateway.yaml" if args.proxy == "gateway" else "nginx.conf")

    def gateway_config(self, extra=""):
        settings = (["http2: always"] if self.args.upstream_h2 else []) + \
            ([f"idle_timeout: {int(self.args.pool_idle_timeout * 1000)}ms"] if self.args.pool_idle_timeout else [])
        pool = ", pool: { " + ", ".join(settings) + " }" if settings else ""
        route_extra = ", coalesce: true" if self.args.coalesce else ""
        return GATEWAY_CONFIG.format(port=self.port, admin=self.admin, upstream=self.upstream_port,
                                     drain=self.args.drain, threads=self.args.threads, pool=pool,
                                     route_extra=route_extra) + extra

    def write_config(self, text):
        temporary = self.config + ".tmp"
        with open(temporary, "w") as f:
            f.write(text)
        os.rename(temporary, self.config)

    def start(self):
        if self.args.proxy == "gateway":
            self.write_config(self.gateway_config())
            argv = [self.args.gateway, "serve", "--config", self.config]
        else:
            for sub in ("body", "proxy", "fcgi", "uwsgi", "scgi"):
                os.makedirs(os.path.join(self.dir, "tmp", sub), exist_ok=True)
            self.write_config(NGINX_CONFIG.format(dir=self.dir, port=self.port, upstream=self.upstream_port,
                                                  http2=" http2" if self.args.proto == "h2" else ""))
            argv = [self.args.nginx, "-p", self.dir, "-c", self.config, "-g", "daemon off;"]
        self.process = spawn(argv, open(self.out, "wb"), open(self.err, "wb"))
        deadline = time.monotonic() + 10
        if self.args.proxy == "gateway":
            while time.monotonic() < deadline and self.process.poll() is None:
                if http_get(self.admin, "/readyz", 0.5)[0] == 200:
                    return True
                time.sleep(0.03)
            return False
        return wait_port(self.port, deadline, self.process)

    def access_log(self):
        path = self.out if self.args.proxy == "gateway" else os.path.join(self.dir, "access.log")
        lines = []
        try:
            with open(path, "rb") as f:
                for raw in f:
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(entry, dict) and entry.get("msg") == "access":
                        lines.append(entry)
        except OSError:
            pass
        return lines

    def logs_text(self):
        text = ""
        for path in (self.out, self.err, os.path.join(self.dir, "error.log")):
            try:
                with open(path, "rb") as f:
                    text += f.read().decode(errors="replace")
            except OSError:
                pass
        return text

    def metrics(self):
        status, body = http_get(self.admin, "/metrics")
        values = {}
        if status == 200:
            for line in body.splitlines():
                m = re.match(r'^(moya_gateway_config_[a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)$', line)
                if m:
                    values[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        return values

    def stop(self, timeout):
        """SIGTERM (SIGQUIT for nginx) and wait: (exit code, seconds) or (None, None)."""
        if self.process.poll() is None:
            started = time.monotonic()
            self.process.send_signal(signal.SIGTERM if self.args.proxy == "gateway" else signal.SIGQUIT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=2)
                return None, None
            return self.process.returncode, time.monotonic() - started
        return self.process.returncode, 0.0


class Upstream:
    def __init__(self, args, directory):
        self.args = args
        self.port = free_port()
        self.log = os.path.join(directory, "upstream.log")
        self.err = os.path.join(directory, "upstream.err")
        self.process = None
        self.killed = set()

    def start(self):
        self.process = spawn([sys.executable, os.path.abspath(__file__), "upstream", "--port", str(self.port),
                              "--log", self.log, "--delay", str(self.args.delay),
                              "--lifetime", str(self.args.duration + 60)]
                             + (["--faults"] if self.args.upstream_faults else [])
                             + (["--h2"] if self.args.upstream_h2 else [])
                             + (["--idle-close", str(self.args.idle_close), "--idle-race", str(self.args.idle_race)]
                                if self.args.idle_close else []),
                             subprocess.DEVNULL, open(self.err, "ab"))
        return wait_port(self.port, time.monotonic() + 10, self.process)

    def kill9(self):
        self.killed.add(self.process.pid)
        self.process.kill()
        self.process.wait(timeout=5)

    def events(self):
        self.idle_closes = self.idle_unread = self.goaways = 0
        self.ignored = set()
        recv, sent, abort, starts = collections.defaultdict(list), collections.defaultdict(list), \
            collections.defaultdict(list), []
        try:
            with open(self.log) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3 and parts[0] == "start":
                        starts.append((int(parts[1]), float(parts[2])))
                    elif len(parts) == 4:
                        if parts[0] == "idle":
                            self.idle_closes += 1
                        elif parts[0] == "idle_unread":
                            self.idle_unread += 1
                        elif parts[0] == "ignored":
                            self.ignored.add(parts[1])
                        elif parts[0] == "goaway":
                            self.goaways += 1
                        target = {"recv": recv, "sent": sent, "abort": abort}.get(parts[0])
                        if target is not None:
                            target[parts[1]].append((float(parts[2]), int(parts[3])))
        except OSError:
            pass
        return recv, sent, abort, starts


# ---------------------------------------------------------------------------------------------------------------------
# Classification (§4.2)

FAILURES_NO_RESPONSE = {"ConnectionRefused", "RemoteDisconnected", "Reset", "Timeout", "GOAWAY-unprocessed",
                        "IncompleteRead", "RefusedStream", "StreamReset"}


def classify(run, records, upstream, access, info):
    recv, sent, abort, starts = upstream.events()
    by_id = {r["id"]: r for r in records}
    access_count = collections.Counter(e.get("request_id") for e in access)
    access_status = collections.defaultdict(list)
    for e in access:
        access_status[e.get("request_id")].append(e.get("status"))
    base = run.base

    counts = collections.Counter()
    outcomes = collections.Counter()
    retryable = collections.Counter()
    examples = collections.defaultdict(list)
    gateway_errors = collections.Counter()

    def example(name, r, **extra):
        if len(examples[name]) < 6:
            u = {"recv": [round(t - base, 3) for t, _ in recv.get(r["id"], [])],
                 "sent": [round(t - base, 3) for t, _ in sent.get(r["id"], [])],
                 "abort": [round(t - base, 3) for t, _ in abort.get(r["id"], [])]}
            entry = {k: r.get(k) for k in ("id", "kind", "method", "outcome", "status", "bytes", "reused", "close",
                                           "stream", "goaway_last", "error", "got", "got_len", "want_len")
                     if r.get(k) is not None}
            entry.update(t0=round(r["t0"], 3), t1=round(r["t1"] or 0, 3), upstream=u,
                         access=access_status.get(r["id"], []))
            entry.update(extra)
            examples[name].append(entry)

    killed = upstream.killed
    down = info.get("upstream_down")  # (t_kill, t_ready) relative
    get_unexplained = 0
    for r in records:
        rid, outcome = r["id"], r["outcome"]
        outcomes[outcome] += 1
        seen = rid in recv
        finished = rid in sent
        if outcome == "ok" and r.get("leader") and r["leader"] != rid:
            # A coalesced follower: its leader must be a request of this run for the same URL and identity that the
            # upstream received, and the follower must have asked before the shared answer was sent (no caching).
            leader = by_id.get(r["leader"])
            if leader is None or leader["path"] != r["path"] or leader.get("auth") != r.get("auth") or \
                    leader["method"] != "GET" or r["leader"] not in recv:
                outcome = r["outcome"] = "MISROUTED"
                r["got"] = r["leader"]
            else:
                counts["followers"] += 1
                first_sent = min((t for t, _ in sent.get(r["leader"], [])), default=None)
                if first_sent is not None and r["t0"] > first_sent - base + 0.2:
                    counts["STALE_SHARE"] += 1
                    example("STALE_SHARE", r, leader_sent=round(first_sent - base, 3))
        if outcome == "ok":
            counts["ok"] += 1
            if access_count[rid] == 0:
                counts["LOG_MISSING"] += 1
                example("LOG_MISSING", r)
            continue
        if outcome == "MISROUTED":
            counts["MISROUTED"] += 1
            example("MISROUTED", r)
            continue
        if outcome == "TRUNC":
            counts["TRUNC"] += 1
            example("TRUNC", r)
            continue
        explained = False
        if finished:
            counts["LOST"] += 1
            example("LOST", r)
        elif seen:
            dead = all(pid in killed for _, pid in recv[rid])
            if outcome.startswith("http_"):
                # The upstream never finished (aborted, or killed) and the client got an explicit error.
                counts["upstream_unfinished_error"] += 1
                explained = dead
                if not dead:
                    example("upstream_unfinished_error", r)
            elif dead and outcome in ("IncompleteRead", "StreamReset") and r["bytes"] > 0:
                # The upstream died mid-answer after the head went out: the cut is passed on, visibly.
                counts["upstream_died_mid_body"] += 1
                explained = True
            else:
                counts["LOST"] += 1
                example("LOST", r)
        elif outcome.startswith("http_"):
            gateway_errors[outcome] += 1
            if down and r["t1"] >= down[0] and r["t0"] <= down[1] + 0.05 and outcome in ("http_502", "http_503", "http_504"):
                explained = True
        elif outcome in ("ConnectionRefused", "GOAWAY-unprocessed", "RefusedStream"):
            retryable[{"ConnectionRefused": "refused", "GOAWAY-unprocessed": "goaway_above_last_stream",
                       "RefusedStream": "refused_stream"}[outcome]] += 1
        elif outcome in ("RemoteDisconnected", "Reset") and r["bytes"] == 0 and access_count[rid] == 0 and \
                r["kind"] != "h":
            # h1: a reused keep-alive connection closed while idle, or a new one the proxy never took.
            retryable["idle_keepalive_close" if r["reused"] else "reset_before_accept"] += 1
        elif outcome in ("RemoteDisconnected", "Reset") and r["kind"] == "h" and r.get("conn_heard") is False:
            # h2: the connection closed before the server said anything (not even SETTINGS): never taken.
            retryable["reset_before_accept"] += 1
        else:
            counts["DROPPED"] += 1
            example("DROPPED", r)
        if down and r["method"] == "GET" and r["kind"] != "p" and not explained:
            get_unexplained += 1
            if len(examples["GET_UNEXPLAINED"]) < 6:
                example("GET_UNEXPLAINED", r)

    dup = retried_get = 0
    for rid, receipts in recv.items():
        if len(receipts) < 2:
            continue
        r = by_id.get(rid)
        first_sent = min((t for t, _ in sent.get(rid, [])), default=None)
        last_recv = max(t for t, _ in receipts)
        if r is not None and r["method"] == "GET" and (first_sent is None or first_sent > last_recv):
            retried_get += 1
        else:
            dup += 1
            if r is not None:
                example("DUP", r, receipts=len(receipts))
    phantom = sorted(rid for rid in recv if rid not in by_id)
    log_extra = sum(n - 1 for n in access_count.values() if n > 1) + \
        sum(n for rid, n in access_count.items() if rid not in by_id)
    for rid, n in access_count.items():
        if (n > 1 or rid not in by_id) and len(examples["LOG_EXTRA"]) < 6:
            examples["LOG_EXTRA"].append({"id": rid, "lines": n, "status": access_status[rid]})
    log_for_unanswered = sum(1 for r in records if r["outcome"] in FAILURES_NO_RESPONSE and access_count[r["id"]])

    return {
        "requests": len(records), "outcomes": dict(sorted(outcomes.items())), "ok": counts["ok"],
        "retryable": sum(retryable.values()), "retryable_kinds": dict(retryable),
        "LOST": counts["LOST"], "DUP": dup, "MISROUTED": counts["MISROUTED"], "TRUNC": counts["TRUNC"],
        "LOG_MISSING": counts["LOG_MISSING"], "LOG_EXTRA": log_extra, "DROPPED": counts["DROPPED"],
        "GET_UNEXPLAINED": get_unexplained, "retried_get": retried_get,
        "followers": counts["followers"], "STALE_SHARE": counts["STALE_SHARE"],
        "shared_gets": sum(1 for r in records if r.get("shared") and r["method"] == "GET"),
        "shared_get_upstream_hits": sum(1 for r in records if r.get("shared") and r["method"] == "GET"
                                        and r["id"] in recv),
        "shared_posts": sum(1 for r in records if r.get("shared") and r["method"] == "POST"),
        "shared_post_upstream_hits": sum(1 for r in records if r.get("shared") and r["method"] == "POST"
                                         and r["id"] in recv),
        "idle_closes": upstream.idle_closes, "idle_closes_with_request_unread": upstream.idle_unread,
        "upstream_goaways": upstream.goaways, "upstream_ignored_above_goaway": len(upstream.ignored),
        "ignored_above_goaway_then_failed": sum(1 for r in records if r["id"] in upstream.ignored
                                                and r["outcome"] != "ok"),
        "not_ok_by_method": dict(collections.Counter("%s %s" % (r["method"], r["outcome"]) for r in records
                                                     if r["outcome"] != "ok" and r["kind"] != "p")),
        "gateway_errors_upstream_unseen": dict(gateway_errors),
        "upstream_unfinished_error": counts["upstream_unfinished_error"],
        "upstream_died_mid_body": counts["upstream_died_mid_body"],
        "upstream_received": sum(len(v) for v in recv.values()), "upstream_sent": sum(len(v) for v in sent.values()),
        "upstream_aborted": sum(len(v) for v in abort.values()), "phantom": len(phantom),
        "access_lines": len(access), "log_lines_for_unanswered": log_for_unanswered,
        "examples": {k: v for k, v in examples.items() if v},
    }


# ---------------------------------------------------------------------------------------------------------------------
# Orchestration

def run_harness(args):
    directory = args.dir or tempfile.mkdtemp(prefix="nothing-lost-")
    os.makedirs(directory, exist_ok=True)
    hard_deadline = time.monotonic() + args.duration + args.hard_extra

    def watchdog():
        while time.monotonic() < hard_deadline:
            time.sleep(0.2)
        kill_children()
        print(json.dumps({"error": "hard deadline", "dir": directory, "passed": False}), flush=True)
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()

    def on_signal(number, _):
        kill_children()
        os._exit(128 + number)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    if args.proxy == "gateway" and not (args.gateway and os.access(args.gateway, os.X_OK)):
        print(json.dumps({"error": "no gateway binary: %r" % args.gateway}))
        return 2
    upstream = Upstream(args, directory)
    for stale in ("upstream.log", "records.jsonl", "summary.json", "access.log"):
        if os.path.exists(os.path.join(directory, stale)):
            os.remove(os.path.join(directory, stale))
    if not upstream.start():
        print(json.dumps({"error": "the echo upstream did not start", "dir": directory}))
        return 2
    proxy = Proxy(args, directory, upstream.port)
    if not proxy.start():
        print(json.dumps({"error": "the proxy did not start", "dir": directory,
                          "log": proxy.logs_text()[-2000:]}))
        return 2

    run = Run(args)
    port_fn = lambda: proxy.port  # noqa: E731
    threads = []
    if args.proto in ("h1", "mix"):
        h1_workers = args.workers if args.proto == "h1" else args.workers // 2
        for i in range(h1_workers):
            # Staggered starts: when the event hits, requests are at every phase of their exchange.
            threads.append(threading.Thread(target=h1_worker, args=(run, i, i % 2 == 0, port_fn, "/echo",
                                                                    args.delay * i / h1_workers), daemon=True))
    if args.proto in ("h2", "mix"):
        h2_streams = args.workers if args.proto == "h2" else args.workers - args.workers // 2
        conns = max(1, h2_streams // args.streams)
        for i in range(conns):
            threads.append(threading.Thread(target=h2_connection_worker,
                                            args=(run, i, args.streams, port_fn, args.delay * i / conns), daemon=True))
    for i in range(args.slow_readers):
        threads.append(threading.Thread(target=slow_reader_worker, args=(run, i, port_fn, max(0.0, args.event_at - 1.0) + 0.3 * i),
                                        daemon=True))
    probes = []
    if args.event in ("reload-good", "reload-bad"):
        threads.append(threading.Thread(target=probe_worker, args=(run, port_fn, probes), daemon=True))
    for t in threads:
        t.start()

    info = {}
    event_time = run.base + args.event_at
    while time.time() < event_time:
        time.sleep(min(0.05, max(0.0, event_time - time.time())))
    info["event_t"] = round(run.now(), 3)
    exit_code = exit_after = None
    shutdown = args.event in ("term", "quit", "kill")
    if args.event == "term":
        proxy.process.send_signal(signal.SIGTERM)
    elif args.event == "quit":
        proxy.process.send_signal(signal.SIGQUIT)
    elif args.event == "kill":
        proxy.process.kill()
    elif args.event == "reload-good":
        proxy.write_config(proxy.gateway_config(GOOD_RELOAD))
        proxy.process.send_signal(signal.SIGHUP)
    elif args.event == "reload-bad":
        proxy.write_config(proxy.gateway_config(BAD_RELOAD))
        proxy.process.send_signal(signal.SIGHUP)
    elif args.event == "upstream-goaway":
        upstream.process.send_signal(signal.SIGUSR1)
    elif args.event == "upstream-restart":
        t_kill = run.now()
        upstream.kill9()
        time.sleep(args.down)
        upstream.start()
        info["upstream_down"] = (t_kill, run.now())
        info["upstream_down_s"] = [round(t_kill, 3), round(run.now(), 3)]
    signalled = time.monotonic()

    if shutdown:
        limit = args.drain + 5
        try:
            proxy.process.wait(timeout=limit)
            exit_code = proxy.process.returncode
            exit_after = time.monotonic() - signalled
        except subprocess.TimeoutExpired:
            proxy.process.kill()
            proxy.process.wait(timeout=2)
        # Nothing more to learn once the proxy is gone: stop the load shortly after.
        run.stop_at = min(run.stop_at, time.time() + 0.5)

    for t in threads:
        t.join(timeout=max(0.1, hard_deadline - time.monotonic() - 2))
    metrics = {}
    if not shutdown:
        if args.proxy == "gateway":
            metrics = proxy.metrics()
        exit_code, exit_after = proxy.stop(timeout=args.drain + 5)
    time.sleep(0.1)  # the upstream's last log lines
    access = proxy.access_log()
    records = [r for r in run.records if r["t1"] is not None or r.get("outcome")]
    for r in records:
        r.pop("body", None)
    with open(os.path.join(directory, "records.jsonl"), "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")

    main_records = [r for r in records if r["kind"] != "p"]
    summary = {"scenario": args.event, "proxy": args.proxy, "proto": args.proto, "workers": args.workers,
               "duration": args.duration, "delay": args.delay, "dir": directory, "threads": args.threads,
               "coalesce": args.coalesce, "upstream_h2": args.upstream_h2, "idle_close": args.idle_close}
    summary.update(classify(run, records, upstream, access, info))
    summary["event_t"] = info["event_t"]
    if "upstream_down_s" in info:
        summary["upstream_down"] = info["upstream_down_s"]
    summary["exit_code"] = exit_code
    summary["exit_after_signal_s"] = round(exit_after, 3) if exit_after is not None else None
    summary["not_ok"] = sum(1 for r in main_records if r["outcome"] != "ok")
    summary["not_ok_after_event"] = sum(1 for r in main_records if r["outcome"] != "ok" and r["t1"] >= info["event_t"])
    # Keep-alive connections told to close (the drain's `Connection: close`); one-shot connections ask for it.
    summary["keepalive_close_responses"] = sum(1 for r in records if r.get("close") and r["kind"] == "k")
    # LIFE-01: a keep-alive response finished after SIGTERM must say `Connection: close` (the drain ends the
    # connection after it); one without it invites another request on a connection about to close.
    summary["keepalive_responses_after_term_without_close"] = sum(
        1 for r in records if r["kind"] == "k" and r["status"] is not None and r["t1"] > info["event_t"] + 0.01
        and not r.get("close")) if args.event in ("term", "quit") else None
    if run.goaways:
        patterns = collections.Counter(",".join(str(x) for x in g) for g in run.goaways if g)
        summary["goaway_patterns"] = dict(patterns)
        summary["h2_connections"] = len(run.goaways)
    criteria = {k: summary[k] == 0 for k in ("LOST", "DUP", "MISROUTED", "TRUNC", "LOG_MISSING", "LOG_EXTRA",
                                             "DROPPED")}
    if args.event in ("term", "quit"):
        criteria["exit_code"] = exit_code == 0
        criteria["exit_within_drain"] = exit_after is not None and exit_after <= args.drain + 1
        if args.proto != "h2":
            criteria["drain_connection_close"] = summary["keepalive_responses_after_term_without_close"] == 0
    if args.event in ("reload-good", "reload-bad"):
        criteria["retryable"] = summary["retryable"] == 0
        criteria["not_ok"] = summary["not_ok"] == 0
        t_event = info["event_t"]
        late = [p for p in probes if p["t0"] > t_event + 1.0]
        new_route = [p for p in probes if p["t0"] >= t_event and p["outcome"] == "ok"
                     and p.get("seen_path", "").startswith("/via-v2/")]
        summary["probe"] = {"count": len(probes), "after_reload_plus_1s": len(late),
                            "outcomes_after_reload_plus_1s": dict(collections.Counter(p["outcome"] for p in late)),
                            "outcomes_before_reload": dict(collections.Counter(p["outcome"] for p in probes
                                                                               if p["t1"] < t_event))}
        good = "config_reloads_total" + '{result="success"}'
        bad = "config_reloads_total" + '{result="failure"}'
        summary["reload_metrics"] = {k.replace("moya_gateway_", ""): v for k, v in metrics.items()}
        if args.event == "reload-good":
            first = min((p["t0"] for p in new_route), default=None)
            summary["new_route_first_seen_s"] = round(first - t_event, 3) if first is not None else None
            criteria["new_route_within_1s"] = first is not None and first - t_event <= 1.0 and bool(late) and all(
                p["outcome"] == "ok" and p.get("seen_path", "").startswith("/via-v2/") for p in late)
            criteria["reload_success_metric"] = metrics.get("moya_gateway_" + good) == 1
        else:
            criteria["old_config_kept"] = bool(late) and all(p["outcome"] == "http_404" for p in late)
            criteria["reload_failure_metric"] = metrics.get("moya_gateway_" + bad) == 1 and \
                metrics.get("moya_gateway_config_last_reload_successful") == 0
            text = proxy.logs_text()
            criteria["reload_error_logged"] = "unknown upstream 'missing'" in text
    if args.event == "upstream-restart":
        criteria["GET_UNEXPLAINED"] = summary["GET_UNEXPLAINED"] == 0
    if args.event == "upstream-goaway":
        # A graceful upstream shutdown (GOAWAY NO_ERROR): every stream above its last-stream-id was not processed and
        # may be retried whatever its method (RFC 9113 §8.7), and the ones below it are answered: no request fails.
        criteria["not_ok"] = summary["not_ok"] == 0
        criteria["goaway_sent"] = summary["upstream_goaways"] > 0
    if args.coalesce:
        # COAL: followers answered with their flight's answer (fewer upstream calls than GETs), no stale share; a
        # POST is never shared (each one the upstream sees is its own, checked as MISROUTED/DUP above).
        criteria["STALE_SHARE"] = summary["STALE_SHARE"] == 0
        criteria["coalesced"] = summary["followers"] > 0 and \
            summary["shared_get_upstream_hits"] < summary["shared_gets"]
    if args.idle_close:
        # UP-10: a GET never fails over an upstream's idle close (retried on a fresh connection before any response
        # byte); a POST may fail (502) but the upstream never sees it twice (DUP above).
        criteria["get_not_ok"] = not any(r["method"] == "GET" and r["outcome"] != "ok" for r in main_records)
        summary["post_not_ok"] = sum(1 for r in main_records if r["method"] == "POST" and r["outcome"] != "ok")
        if args.event == "none":
            criteria["post_failed_only_502"] = all(r["outcome"] in ("ok", "http_502") for r in main_records
                                                   if r["method"] == "POST")
        if args.pool_idle_timeout and args.pool_idle_timeout < args.idle_close:
            # The gateway's pool.idle_timeout below the upstream's: no connection is reused near its close.
            criteria["post_not_ok"] = summary["post_not_ok"] == 0
    if args.event == "kill" or args.proxy != "gateway":
        summary["report_only"] = True
    summary["criteria"] = criteria
    summary["failed"] = [k for k, v in criteria.items() if not v]
    summary["passed"] = not summary["failed"]
    summary["elapsed_s"] = round(run.now(), 3)
    line = json.dumps(summary, sort_keys=False)
    with open(os.path.join(directory, "summary.json"), "w") as f:
        f.write(line + "\n")
    kill_children()
    print(line, flush=True)
    if summary.get("report_only"):
        return 0
    return 0 if summary["passed"] else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    up = sub.add_parser("upstream")
    up.add_argument("--port", type=int, required=True)
    up.add_argument("--log", required=True)
    up.add_argument("--delay", type=float, default=0.5)
    up.add_argument("--lifetime", type=float, default=120)
    up.add_argument("--faults", action="store_true", help="answer some ids wrongly (classifier self-check)")
    up.add_argument("--h2", action="store_true", help="speak h2c (prior knowledge) instead of HTTP/1.1")
    up.add_argument("--goaway-lag", type=float, default=0.1,
                    help="h2c: after SIGUSR1, send the GOAWAY this long after deciding its last-stream-id")
    up.add_argument("--idle-close", type=float, default=0.0,
                    help="HTTP/1.1: close a keep-alive connection idle this long (s); 0 = never")
    up.add_argument("--idle-race", type=float, default=0.0,
                    help="with --idle-close: a request arriving in the last this-many seconds of the idle time is "
                         "closed unread (the keep-alive race made likely)")
    r = sub.add_parser("run")
    r.add_argument("--proxy", choices=["gateway", "nginx"], default="gateway")
    r.add_argument("--gateway", help="path to the moya-gateway binary")
    r.add_argument("--nginx", default="/usr/sbin/nginx")
    r.add_argument("--event", required=True,
                   choices=["term", "quit", "reload-good", "reload-bad", "upstream-restart", "upstream-goaway", "kill",
                            "none"])
    r.add_argument("--proto", choices=["h1", "h2", "mix"], default="h1")
    r.add_argument("--workers", type=int, default=20, help="requests in flight (h1 workers + h2 streams)")
    r.add_argument("--streams", type=int, default=5, help="concurrent streams per h2 connection")
    r.add_argument("--h2-race", action="store_true",
                   help="h2: after a GOAWAY shutdown notice (2^31-1), read nothing for 300 ms and open a stream "
                        "every 20 ms (a distant peer): some land above the final last-stream-id")
    r.add_argument("--duration", type=float, default=5.0)
    r.add_argument("--think", type=float, default=0.1, help="mean idle time between keep-alive requests (s)")
    r.add_argument("--think-spread", type=float, default=1.0,
                   help="think time uniform in think * (1 -/+ spread); 1 = from 0 to twice --think")
    r.add_argument("--coalesce", action="store_true",
                   help="the route has coalesce: true; GETs and POSTs of all workers go to shared URLs (one per "
                        "half upstream delay and size) with one of two identities (Authorization)")
    r.add_argument("--upstream-h2", action="store_true",
                   help="the echo upstream speaks h2c and the gateway's upstream has pool: { http2: always }")
    r.add_argument("--idle-close", type=float, default=0.0,
                   help="UP-10: the echo upstream closes keep-alive connections idle this long (s)")
    r.add_argument("--idle-race", type=float, default=0.0,
                   help="UP-10: with --idle-close, a request reaching the upstream in the last this-many seconds of "
                        "the idle time is closed unread (a RST), as one crossing the close on the wire would be")
    r.add_argument("--pool-idle-timeout", type=float, default=0.0,
                   help="the gateway's upstream has pool: { idle_timeout: this many seconds }")
    r.add_argument("--slow-readers", type=int, default=0,
                   help="clients reading a 12 MiB relayed body slowly (a relay in flight across the event)")
    r.add_argument("--event-at", type=float, default=2.0)
    r.add_argument("--delay", type=float, default=0.5, help="upstream latency (s)")
    r.add_argument("--down", type=float, default=0.3, help="upstream-restart: seconds the upstream stays down")
    r.add_argument("--drain", type=float, default=3.0, help="the gateway's drain_timeout (s)")
    r.add_argument("--threads", type=int, default=2, help="the gateway's server.threads")
    r.add_argument("--upstream-faults", action="store_true",
                   help="self-check: the upstream misroutes and silently truncates some answers")
    r.add_argument("--request-timeout", type=float, default=3.0)
    r.add_argument("--hard-extra", type=float, default=15.0, help="hard deadline: duration + this")
    r.add_argument("--dir", help="working directory (configs, logs, records.jsonl, summary.json)")
    args = parser.parse_args()
    if args.mode == "upstream":
        run_upstream(args)
        return 0
    try:
        return run_harness(args)
    finally:
        kill_children()


if __name__ == "__main__":
    sys.exit(main())
