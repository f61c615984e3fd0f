#!/usr/bin/env python3
"""An upstream with known per-path latencies, for the record-and-replay test (issue 39).

GET /v1/fast sleeps 20 ms, /v1/mid 40 ms, /v1/slow 80 ms, /v1/users/N 30 ms (body names N), /v1/missing 25 ms and
answers 404; POST /v1/items 35 ms and 201; /v1/gz 30 ms with a gzip body; /v1/echo 20 ms and echoes the request's
Authorization, Cookie and X-Api-Key (to show that the recording scrubs them). Every answer sets a cookie
(Set-Cookie: session=--cookie), and is written in one send with TCP_NODELAY, so the latency is the sleep and not
Nagle's algorithm. Prints "ready PORT" once listening; runs until killed.
"""
import argparse
import gzip
import http.server
import json
import socket
import socketserver
import time

LATENCY = {"/v1/fast": 0.020, "/v1/mid": 0.040, "/v1/slow": 0.080, "/v1/missing": 0.025, "/v1/gz": 0.030,
           "/v1/echo": 0.020, "/v1/items": 0.035}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cookie = "x"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, status, body, extra=()):
        head = [f"HTTP/1.1 {status} X", "Content-Type: application/json", f"Content-Length: {len(body)}",
                f"Set-Cookie: session={self.cookie}; Path=/", *extra, "", ""]
        self.wfile.write("\r\n".join(head).encode() + body)
        self.wfile.flush()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.startswith("/v1/users/"):
            time.sleep(0.030)
            return self.answer(200, json.dumps({"user": path.rsplit("/", 1)[1], "query": self.path.partition("?")[2]}).encode())
        time.sleep(LATENCY.get(path, 0.020))
        if path == "/v1/missing":
            return self.answer(404, b'{"error": "no such thing"}')
        if path == "/v1/echo":
            seen = {name: self.headers.get(name) for name in ("Authorization", "Cookie", "X-Api-Key")}
            return self.answer(200, json.dumps(seen).encode())
        if path == "/v1/gz":
            return self.answer(200, gzip.compress(b'{"compressed": true, "padding": "' + b"z" * 2000 + b'"}'),
                               ["Content-Encoding: gzip"])
        return self.answer(200, json.dumps({"path": path}).encode())

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        time.sleep(LATENCY.get(self.path, 0.020))
        return self.answer(201, b'{"created": true}')


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cookie", default="x")
    args = parser.parse_args()
    Handler.cookie = args.cookie
    server = Server(("127.0.0.1", args.port), Handler)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
