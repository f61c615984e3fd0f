#!/usr/bin/env python3
"""Mutational fuzzer for the gateway's HTTP client: an upstream that answers with hostile bytes.

Upstream listeners: HTTP/1.1 (responses built from seeds: Content-Length, chunked with extensions and trailers,
close-delimited, 1xx before the answer, gzip-encoded, keep-alive or close; then mutated: bit flips, cuts, splices,
huge and negative numbers, stray CR/LF and NUL), h2c (a python3-h2 server whose output bytes are mutated, or whose
frames are answered out of order, reset, or cut) and, with --tls-port, TLS (garbage or a cut record instead of a
handshake, a close mid-handshake, or the HTTP/1.1 answers inside TLS, closed with or without close_notify). A driver
sends requests through the gateway (routes `/h1/...`, `/h2/...` and `/tls/...`, GET, HEAD and POST, small and large)
and after every one checks that the gateway's process is alive and that its answer, if any, starts with an HTTP
status line.

Bounded: --cases requests in all (shared by --workers threads) and a --deadline in seconds. Traffic only to
127.0.0.1. Start the gateway first with its upstreams at --h1-port, --h2-port and --tls-port (nothing listens there
until this script does), then this script with the gateway's --gateway-port and --pid. Prints one JSON summary line:
{"cases", "answered", "statuses", "malformed", "alive", "harness_errors", "seconds"}.
"""
import argparse, gzip, json, random, socket, ssl, sys, threading, time

import h2.config
import h2.connection
import h2.events

from fuzzing import INTERESTING, BoundedRun, mutate

TOKENS = INTERESTING + [b"gzip", b"HTTP/1.1 100 Continue\r\n\r\n"]


def h1_response(rnd):
    body = rnd.choice([b"", b"ok", b'{"a":1}', b"z" * rnd.randint(100, 300000)])
    head = b"HTTP/1.1 " + rnd.choice([b"200 OK", b"201 Created", b"204 No Content", b"304 Not Modified",
                                       b"401 Unauthorized", b"502 Bad Gateway"]) + b"\r\n"
    head += b"Server: fuzz\r\nX-Custom: v\r\n"
    if rnd.random() < 0.2:
        head = b"HTTP/1.1 100 Continue\r\n\r\n" + head
    if rnd.random() < 0.25:
        body = gzip.compress(body)
        head += b"Content-Encoding: gzip\r\n"
    framing = rnd.randint(0, 2)
    if framing == 0:
        return head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body, False
    if framing == 1:
        chunks = b""
        position = 0
        while position < len(body):
            size = rnd.randint(1, 70000)
            piece = body[position:position + size]
            chunks += b"%x;ext=1\r\n" % len(piece) + piece + b"\r\n"
            position += size
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nTrailer-Field: t\r\n\r\n", False
    return head + b"Connection: close\r\n\r\n" + body, True


def read_request(sock):
    """Reads one request head (and a Content-Length body); None at EOF."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            try:
                length = int(line.split(b":", 1)[1])
            except ValueError:
                length = 0
            while len(rest) < length:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
    return head


def serve_h1(sock, seed):
    rnd = random.Random(seed)
    sock.settimeout(3)
    try:
        while read_request(sock) is not None:
            response, closes = h1_response(rnd)
            if rnd.random() < 0.7:
                response = mutate(rnd, response, TOKENS)
            position = 0
            while position < len(response):
                size = rnd.choice([len(response), 1, 13, 1000, 65536])
                sock.sendall(response[position:position + size])
                position += size
            if closes or rnd.random() < 0.2:
                break
            if rnd.random() < 0.05:
                time.sleep(rnd.random() * 0.5)
    except (OSError, ValueError):
        pass
    finally:
        sock.close()


def serve_h2(sock, seed):
    rnd = random.Random(seed)
    sock.settimeout(3)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None,
                                                                validate_inbound_headers=False))
    conn.initiate_connection()
    try:
        sock.sendall(conn.data_to_send())
        while True:
            data = sock.recv(65536)
            if not data:
                break
            try:
                events = conn.receive_data(data)
            except Exception:
                break
            for event in events:
                if isinstance(event, h2.events.RequestReceived):
                    stream = event.stream_id
                    body = rnd.choice([b"", b"ok", b"y" * rnd.randint(100, 200000)])
                    headers = [(":status", rnd.choice(["200", "204", "404", "500", "100"])), ("server", "fuzz")]
                    if rnd.random() < 0.3:
                        headers.append(("content-length", str(len(body) + rnd.choice([0, 0, 1, -1]))))
                    try:
                        conn.send_headers(stream, headers, end_stream=not body)
                        if body:
                            window = conn.local_flow_control_window(stream)
                            conn.send_data(stream, body[:max(0, min(window, 16384))], end_stream=len(body) <= 16384)
                        if rnd.random() < 0.1:
                            conn.reset_stream(stream)
                    except Exception:
                        pass
            out = conn.data_to_send()
            if out and rnd.random() < 0.5:
                out = mutate(rnd, out, TOKENS)
            sock.sendall(out)
            if rnd.random() < 0.03:
                break
    except (OSError, ValueError):
        pass
    finally:
        sock.close()


def serve_tls(context):
    """A TLS upstream: hostile handshakes, or `serve_h1`'s answers inside TLS."""
    def serve(sock, seed):
        rnd = random.Random(seed)
        sock.settimeout(3)
        mode = rnd.randint(0, 5)
        try:
            if mode < 3:
                sock.recv(4096)
                if mode == 0:
                    sock.sendall(bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 3000))))
                elif mode == 1:
                    sock.sendall(b"\x16\x03\x03" + bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 200))))
                sock.close()
                return
            tls = context.wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError, ValueError):
            sock.close()
            return
        if mode == 4:
            serve_h1(tls, seed)
            return
        try:
            while read_request(tls) is not None:
                response, closes = h1_response(rnd)
                tls.sendall(mutate(rnd, response, TOKENS) if rnd.random() < 0.7 else response)
                if closes or rnd.random() < 0.3:
                    break
            if mode == 5:
                tls.unwrap()
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            sock.close()
    return serve


def listen(port):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(256)
    return server


def accept_loop(server, handler, stop):
    seed = 0
    server.settimeout(0.2)
    while not stop.is_set():
        try:
            sock, _ = server.accept()
        except socket.timeout:
            continue
        except OSError:
            break
        seed += 1
        threading.Thread(target=handler, args=(sock, seed * 7919 + server.getsockname()[1]), daemon=True).start()


class Driver:
    def __init__(self, args):
        self.args = args
        self.bounds = BoundedRun(args.pid, args.cases, args.deadline, args.workers)
        self.cases = self.answered = 0
        self.statuses = {}
        self.malformed = []

    def request(self, rnd):
        prefix = rnd.choice(["/h1", "/h2", "/h1shared", "/h1valid"] + (["/tls"] if self.args.tls_port else []))
        method = rnd.choice([b"GET", b"GET", b"HEAD", b"POST"])
        body = b"" if method != b"POST" else b"p" * rnd.choice([3, 1000, 300000])
        request = method + b" " + prefix.encode() + b"/x?i=%d HTTP/1.1\r\nHost: g\r\n" % rnd.randint(0, 3)
        if rnd.random() < 0.3:
            request += b"Accept-Encoding: gzip\r\n"
        if body:
            request += b"Content-Length: %d\r\n" % len(body)
        request += b"Connection: close\r\n\r\n" + body
        sock = socket.create_connection(("127.0.0.1", self.args.gateway_port), timeout=5)
        sock.settimeout(4)
        reply = b""
        try:
            sock.sendall(request)
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                reply += chunk
        except OSError:
            pass
        finally:
            sock.close()
        return reply

    def worker(self, index):
        rnd = random.Random(self.args.seed * 1000 + index)
        while self.bounds.take():
            try:
                reply = self.request(rnd)
            except OSError:
                reply = b""
            if reply.startswith(b"HTTP/1.1 "):
                status = reply[9:12].decode("latin-1")
            else:
                status = "bad" if reply else "none"
            with self.bounds.lock:
                self.cases += 1
                self.answered += bool(reply)
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status == "bad" and len(self.malformed) < 3:
                    self.malformed.append(reply[:80].decode("latin-1"))
            self.bounds.check()

    def run(self):
        seconds = self.bounds.run(self.worker)
        errors = self.bounds.harness_errors
        print(json.dumps({"cases": self.cases, "answered": self.answered, "statuses": self.statuses,
                          "malformed": self.malformed, "alive": self.bounds.alive(), "harness_errors": errors,
                          "seconds": seconds}), flush=True)
        return 0 if not self.bounds.dead and not self.malformed and not errors else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--h1-port", type=int, required=True, help="the HTTP/1.1 upstream's port")
    parser.add_argument("--h2-port", type=int, required=True, help="the h2c upstream's port")
    parser.add_argument("--tls-port", type=int, help="a TLS upstream's port (with --cert and --key)")
    parser.add_argument("--cert", help="the TLS upstream's certificate (PEM)")
    parser.add_argument("--key", help="the TLS upstream's private key (PEM)")
    parser.add_argument("--gateway-port", type=int, required=True, help="the gateway listener to drive requests to")
    parser.add_argument("--pid", type=int, required=True, help="the gateway's process, checked after every request")
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--deadline", type=float, default=60)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    h1_server, h2_server = listen(args.h1_port), listen(args.h2_port)
    stop = threading.Event()
    servers = [(h1_server, serve_h1), (h2_server, serve_h2)]
    if args.tls_port:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        servers.append((listen(args.tls_port), serve_tls(context)))
    for server, handler in servers:
        threading.Thread(target=accept_loop, args=(server, handler, stop), daemon=True).start()
    status = Driver(args).run()
    stop.set()
    return status


if __name__ == "__main__":
    sys.exit(main())
