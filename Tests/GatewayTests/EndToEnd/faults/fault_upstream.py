#!/usr/bin/env python3
"""A scripted faulty HTTP/1.1 upstream for docs/reliability.md §2.5 (UP-*): each path misbehaves in one way.

Loopback only. Prints "ready" once listening; GET /hits answers the number of requests seen per path (JSON).
"""
import argparse
import json
import socket
import struct
import threading
import time

HITS = {}
LOCK = threading.Lock()

RAW = {
    "/bad-status": b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok",
    "/cl-te": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "/dup-cl": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk",
    "/obs-fold": b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
    "/nul": b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok",
    "/neg-cl": b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok",
    "/te-gzip-chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "/http09": b"just a body\r\n",
    "/switch": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    "/huge-header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"x" * 100000 + b"\r\nContent-Length: 2\r\n\r\nok",
    "/hop": b"HTTP/1.1 200 OK\r\nConnection: X-Up-Hop\r\nX-Up-Hop: 1\r\nKeep-Alive: timeout=30\r\nVia: 1.0 upstream-cache\r\n"
            b"Content-Length: 2\r\n\r\nok",
    "/gzip-corrupt": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\n0123456789",
}
CLOSE_AFTER = {"/http09", "/switch"}


def respond(conn, path):
    """Answers one request; returns False when the connection must end."""
    if path.startswith("/stall-small"):      # UP-04, collected: 10 of 100 declared bytes, then nothing
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        time.sleep(20)
        return False
    if path.startswith("/stall-big"):        # UP-04, relayed: 320 KiB of a chunked body, then nothing
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(10):
            conn.sendall(b"8000\r\n" + b"a" * 0x8000 + b"\r\n")
        time.sleep(20)
        return False
    if path.startswith("/reset-small") or path.startswith("/reset-big"):   # UP-05: RST in the middle of the body
        small = path.startswith("/reset-small")
        declared, sent = (100000, 1000) if small else (1000000, 300000)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % declared + b"b" * sent)
        time.sleep(0.05)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False
    if path.startswith("/hang"):            # answers after 5 s unless the caller gives up first ("aborted:/hang")
        conn.settimeout(0.05)
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                gone = conn.recv(1, socket.MSG_PEEK) == b""
            except socket.timeout:
                continue
            except OSError:
                gone = True
            if gone:
                with LOCK:
                    HITS["aborted:/hang"] = HITS.get("aborted:/hang", 0) + 1
                return False
        conn.settimeout(None)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
        return True
    if path.startswith("/endless"):          # a chunked body that never ends; "aborted:/endless" once the reader goes
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.settimeout(10)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                conn.sendall(b"8000\r\n" + b"e" * 0x8000 + b"\r\n")
        except OSError:
            with LOCK:
                HITS["aborted:/endless"] = HITS.get("aborted:/endless", 0) + 1
        return False
    if path.startswith("/extra"):           # UP-07: bytes after a complete response (queue poisoning)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nPOISON")
        return True
    if path.startswith("/close-each"):      # UP-12
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
        return False
    if path.startswith("/hits"):
        with LOCK:
            body = json.dumps(HITS).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        return True
    for prefix, raw in RAW.items():
        if path.startswith(prefix):
            conn.sendall(raw)
            return prefix not in CLOSE_AFTER
    body = ("ok " + path).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return True


def handle(conn):
    buffer = b""
    try:
        while True:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            path = head.split(b" ")[1].decode()
            with LOCK:
                key = path.split("?")[0]
                HITS[key] = HITS.get(key, 0) + 1
            if not respond(conn, path):
                return
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", args.port))
    server.listen(128)
    print("ready", flush=True)
    deadline = time.time() + 300   # never outlives a test run
    server.settimeout(1)
    while time.time() < deadline:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
