#!/usr/bin/env python3
"""What a real client sees of the gateway's stub faults (issue 39), for GatewayStubFaultTests.

HTTP/1.1 (Python's http.client, one connection per request): GET --prefix + each of reset, empty, malformed,
truncated, slow and ok, classified as the client's library reports it: "reset" (ConnectionResetError), "eof" (the
server closed without a response), "parse_error" (not an HTTP response), "truncated" (IncompleteRead: fewer body
bytes than Content-Length), or "ok" with the status, the body's length and the seconds the body took.

HTTP/2 (Python's h2, h2c with prior knowledge, one connection for all): the same paths as streams opened one after
another, each classified "reset:<ERROR_CODE>" (RST_STREAM, with the bytes of body received before it) or "ok"; then
one more request on the same connection, which must still be answered (a fault resets a stream, never the
connection). Prints one JSON line. Every wait is bounded by --timeout seconds.
"""
import argparse
import http.client
import json
import socket
import time

import h2.config
import h2.connection
import h2.errors
import h2.events

PATHS = ["reset", "empty", "malformed", "truncated", "slow", "ok"]


def http1(port, prefix, name, timeout):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.monotonic()
    try:
        connection.request("GET", f"{prefix}/{name}")
        response = connection.getresponse()
        head_at = time.monotonic()
        body = response.read()
        return {"outcome": "ok", "status": response.status, "length": len(body),
                "body_seconds": round(time.monotonic() - head_at, 3), "seconds": round(time.monotonic() - started, 3)}
    except http.client.RemoteDisconnected:
        # (a ConnectionResetError subclass: caught first)
        return {"outcome": "eof"}
    except ConnectionResetError:
        return {"outcome": "reset"}
    except http.client.IncompleteRead as error:
        return {"outcome": "truncated", "received": len(error.partial), "expected_more": error.expected}
    except (http.client.BadStatusLine, http.client.LineTooLong, http.client.HTTPException) as error:
        return {"outcome": "parse_error", "error": type(error).__name__}
    except OSError as error:
        return {"outcome": "error", "error": repr(error)}
    finally:
        connection.close()


class H2Client:
    def __init__(self, port, timeout):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.deadline = time.monotonic() + timeout
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.closed = False

    def get(self, path):
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, [(":method", "GET"), (":path", path), (":scheme", "http"),
                                        (":authority", "127.0.0.1")], end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        result = {"outcome": None, "received": 0}
        while result["outcome"] is None:
            if time.monotonic() > self.deadline:
                return {"outcome": "timeout"}
            try:
                data = self.sock.recv(65536)
            except OSError as error:
                return {"outcome": "error", "error": repr(error)}
            if not data:
                self.closed = True
                return {"outcome": "connection_closed"}
            for event in self.conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    result["status"] = int(dict(event.headers)[":status"])
                elif isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_id == stream:
                        result["received"] += len(event.data)
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    result["outcome"] = f"reset:{h2.errors.ErrorCodes(event.error_code).name}"
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    result["outcome"] = "ok"
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.closed = True
                    result["outcome"] = "goaway"
            self.sock.sendall(self.conn.data_to_send())
        return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--timeout", type=float, default=20)
    args = parser.parse_args()
    report = {"http1": {name: http1(args.port, args.prefix, name, args.timeout) for name in PATHS}}
    client = H2Client(args.port, args.timeout)
    report["http2"] = {name: client.get(f"{args.prefix}/{name}") for name in PATHS}
    report["http2_after"] = client.get(f"{args.prefix}/ok")
    report["http2_connection_closed"] = client.closed
    print(json.dumps(report))


if __name__ == "__main__":
    main()
