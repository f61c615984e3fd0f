#!/usr/bin/env python3
"""HTTP/2 clients that ask for a long answer and never read it: each connection says SETTINGS_INITIAL_WINDOW_SIZE 0
and never opens a window, so no DATA can reach it (issue #37's stalled downloads over HTTP/2).

usage: h2_stalled_downloads.py PORT PATH [--connections 7] [--streams 10] [--header NAME:VALUE ...]
                               [--heads-within 10] --ready FILE [--hold 60]

Opens the connections, sends the requests, and once every stream has its response head (or after --heads-within
seconds) writes
{"heads": N, "statuses": {status: count}} to FILE; then holds the connections open, reading nothing, until it is
killed or --hold seconds have passed. Traffic to 127.0.0.1 only; every wait is bounded.
"""
import argparse
import json
import socket
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("path")
    parser.add_argument("--connections", type=int, default=7)
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--ready", required=True)
    parser.add_argument("--hold", type=float, default=60)
    parser.add_argument("--heads-within", type=float, default=10)
    args = parser.parse_args()
    extra = [tuple(h.split(":", 1)) for h in args.header]

    connections = []
    for _ in range(args.connections):
        sock = socket.create_connection(("127.0.0.1", args.port), timeout=5)
        sock.settimeout(0.05)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0,
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
        })
        conn.initiate_connection()
        for _ in range(args.streams):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [(":method", "GET"), (":path", args.path), (":scheme", "http"),
                                       (":authority", "127.0.0.1")] + extra, end_stream=True)
        sock.sendall(conn.data_to_send())
        connections.append((sock, conn))

    statuses = {}
    heads = 0
    deadline = time.monotonic() + args.heads_within
    while heads < args.connections * args.streams and time.monotonic() < deadline:
        for sock, conn in connections:
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                continue
            if not data:
                continue
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    heads += 1
                    status = dict(event.headers).get(":status", "?")
                    statuses[status] = statuses.get(status, 0) + 1
            pending = conn.data_to_send()
            if pending:
                sock.sendall(pending)
    with open(args.ready, "w") as ready:
        json.dump({"heads": heads, "statuses": statuses}, ready)

    # Hold: nothing is read from here on, no window is ever opened.
    end = time.monotonic() + args.hold
    while time.monotonic() < end:
        time.sleep(0.1)


if __name__ == "__main__":
    main()
