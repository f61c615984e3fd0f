#!/usr/bin/env python3
"""Opens N keep-alive connections to a loopback HTTP/1.1 server, sends one GET on each and reads its answer, then
holds them all open and idle for HOLD seconds (Benchmarks/memory.sh measures the server's RSS meanwhile).

    idle_keepalive.py --port P --path /x --count N --hold S

Prints "ready N" on stdout once every connection has had its answer, and exits after the hold (bounded).
"""
import argparse
import socket
import sys
import time


def read_answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the head")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += chunk
    if not head.startswith(b"HTTP/1.1 2"):
        raise ConnectionError(head.split(b"\r\n")[0].decode(errors="replace"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=8)
    args = parser.parse_args()
    request = f"GET {args.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: idle-keepalive\r\n\r\n".encode()
    sockets = []
    for _ in range(args.count):
        sock = socket.create_connection(("127.0.0.1", args.port), timeout=10)
        sock.sendall(request)
        read_answer(sock)
        sockets.append(sock)
    print(f"ready {len(sockets)}", flush=True)
    time.sleep(args.hold)
    for sock in sockets:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
