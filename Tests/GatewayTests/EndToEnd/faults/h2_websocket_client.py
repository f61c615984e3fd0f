#!/usr/bin/env python3
"""A WebSocket client over HTTP/2 (RFC 8441), for the gateway's end-to-end tests: Python's h2 for the connection and
RFC 6455 frames written and read here (the `websockets` library speaks HTTP/1.1 only).

It connects to --port on 127.0.0.1 (h2c with prior knowledge, or TLS with ALPN h2 and --ca), checks that the server
sent SETTINGS_ENABLE_CONNECT_PROTOCOL = 1, opens an extended CONNECT (`:protocol websocket`) to --path, and when the
answer is 200 sends --messages text and --messages binary messages of --size bytes, checks every echo, pings and
awaits the pong, sends a close frame (1000) and awaits the peer's, then the end of the stream. It prints one JSON
line with what happened. With --wait-close N it sends nothing once the tunnel is open, waits up to N seconds for the
server's close frame, answers it and reports its code. Every wait is bounded (--timeout seconds in all).
"""
import argparse
import json
import os
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


class Peer:
    def __init__(self, args):
        self.deadline = time.monotonic() + args.timeout
        raw = socket.create_connection(("127.0.0.1", args.port), timeout=args.timeout)
        if args.tls:
            context = ssl.create_default_context(cafile=args.ca)
            context.set_alpn_protocols(["h2"])
            self.sock = context.wrap_socket(raw, server_hostname=args.server_name)
            if self.sock.selected_alpn_protocol() != "h2":
                raise RuntimeError("ALPN did not select h2")
        else:
            self.sock = raw
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.stream_id = None
        self.response = None
        self.data = bytearray()
        self.ended = False
        self.end_stream_seen = False
        self.reset = None
        self.settings_seen = False
        self.pending = bytearray()
        self.goaways = 0

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def pump(self):
        """Reads once and handles the events; raises when the deadline passes or the connection ends."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline passed")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        for event in self.conn.receive_data(self.without_goaway(chunk)):
            if isinstance(event, h2.events.RemoteSettingsChanged):
                self.settings_seen = True
            elif isinstance(event, h2.events.ResponseReceived) and event.stream_id == self.stream_id:
                self.response = event.headers
            elif isinstance(event, h2.events.DataReceived) and event.stream_id == self.stream_id:
                self.data += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == self.stream_id:
                self.ended = True
                self.end_stream_seen = True
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == self.stream_id:
                self.reset = event.error_code
                self.ended = True
        self.flush()

    def without_goaway(self, chunk):
        """`chunk` without GOAWAY frames, which are counted in `goaways`. The server's drain sends GOAWAY and goes on
        with the open streams (RFC 9113 §6.8), but python-h2 4.1 closes its connection state on GOAWAY and then
        refuses every frame, the open streams' included."""
        self.pending += chunk
        out = bytearray()
        while len(self.pending) >= 9:
            length = int.from_bytes(self.pending[:3], "big")
            if len(self.pending) < 9 + length:
                break
            frame = self.pending[:9 + length]
            del self.pending[:9 + length]
            if frame[3] == 0x7:
                self.goaways += 1
            else:
                out += frame
        return bytes(out)

    def send(self, data, end=False):
        """Sends `data` on the stream as flow control allows."""
        view = memoryview(data)
        while view:
            window = min(self.conn.local_flow_control_window(self.stream_id), self.conn.max_outbound_frame_size)
            if window <= 0:
                self.pump()
                continue
            self.conn.send_data(self.stream_id, bytes(view[:window]))
            view = view[window:]
            self.flush()
        if end:
            self.conn.end_stream(self.stream_id)
            self.flush()

    def frame(self):
        """The next whole WebSocket frame from the server: (opcode, payload)."""
        while True:
            parsed = parse_frame(self.data)
            if parsed:
                opcode, payload, used = parsed
                del self.data[:used]
                return opcode, payload
            if self.ended:
                raise ConnectionError("stream ended mid-frame")
            self.pump()


def masked_frame(opcode, payload):
    """A client frame (FIN set, masked), RFC 6455 §5.2."""
    header = bytearray([0x80 | opcode])
    length = len(payload)
    if length < 126:
        header.append(0x80 | length)
    elif length < 65536:
        header.append(0x80 | 126)
        header += struct.pack("!H", length)
    else:
        header.append(0x80 | 127)
        header += struct.pack("!Q", length)
    mask = os.urandom(4)
    header += mask
    return bytes(header) + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def parse_frame(buffer):
    """(opcode, payload, bytes used) of the first whole frame in `buffer`, or None; a server's frames are not masked."""
    if len(buffer) < 2:
        return None
    if buffer[1] & 0x80:
        raise ValueError("a server frame is masked")
    opcode = buffer[0] & 0x0F
    length = buffer[1] & 0x7F
    offset = 2
    if length == 126:
        if len(buffer) < 4:
            return None
        length = struct.unpack("!H", bytes(buffer[2:4]))[0]
        offset = 4
    elif length == 127:
        if len(buffer) < 10:
            return None
        length = struct.unpack("!Q", bytes(buffer[2:10]))[0]
        offset = 10
    if len(buffer) < offset + length:
        return None
    if not buffer[0] & 0x80:
        raise ValueError("fragmented frames are not expected from the echo peer")
    return opcode, bytes(buffer[offset:offset + length]), offset + length


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--authority", default="127.0.0.1")
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--ca")
    parser.add_argument("--server-name", default="localhost")
    parser.add_argument("--messages", type=int, default=2)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--wait-close", type=float, default=0)
    args = parser.parse_args()
    report = {"ok": False}
    try:
        peer = Peer(args)
        while not peer.settings_seen:
            peer.pump()
        report["enable_connect_protocol"] = peer.conn.remote_settings.get(
            h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL, 0)
        peer.stream_id = peer.conn.get_next_available_stream_id()
        headers = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https" if args.tls else "http"),
                   (":path", args.path), (":authority", args.authority), ("sec-websocket-version", "13")]
        for line in args.header:
            name, value = line.split(":", 1)
            headers.append((name.strip().lower(), value.strip()))
        peer.conn.send_headers(peer.stream_id, headers)
        peer.flush()
        while peer.response is None and not peer.ended:
            peer.pump()
        response = peer.response or []
        report["response_headers"] = [[k, v] for k, v in response]
        report["status"] = int(dict(response).get(":status", "0"))
        if report["status"] != 200:
            while not peer.ended:
                peer.pump()
            report["body"] = peer.data.decode("utf-8", "replace")
            report["reset"] = peer.reset
            print(json.dumps(report))
            return
        if args.wait_close:
            # Waits for the server's close frame (the gateway's drain), answers it, and reports its code.
            peer.deadline = time.monotonic() + args.wait_close
            opcode, payload = peer.frame()
            report["close_code"] = struct.unpack("!H", payload[:2])[0] if opcode == 0x8 and len(payload) >= 2 else None
            report["close_reason"] = payload[2:].decode("utf-8", "replace") if opcode == 0x8 else None
            peer.send(masked_frame(0x8, payload[:2]))
            while not peer.ended:
                peer.pump()
            report["stream_ended"] = peer.end_stream_seen
            report["goaways"] = peer.goaways
            report["ok"] = opcode == 0x8
            print(json.dumps(report))
            return
        echoed = 0
        for index in range(args.messages):
            for opcode in (0x1, 0x2):
                payload = (b"t" if opcode == 0x1 else b"\x00\xff") * (args.size // (1 if opcode == 0x1 else 2))
                payload = payload[:args.size] + str(index).encode()
                peer.send(masked_frame(opcode, payload))
                got_opcode, got = peer.frame()
                if got_opcode != opcode or got != payload:
                    raise ValueError(f"echo {index} differs: opcode {got_opcode}, {len(got)} bytes")
                echoed += 1
        report["echoed"] = echoed
        peer.send(masked_frame(0x9, b"ping-1"))
        opcode, payload = peer.frame()
        report["pong"] = opcode == 0xA and payload == b"ping-1"
        peer.send(masked_frame(0x8, struct.pack("!H", 1000) + b"done"))
        opcode, payload = peer.frame()
        report["close_code"] = struct.unpack("!H", payload[:2])[0] if opcode == 0x8 and len(payload) >= 2 else None
        while not peer.ended:
            peer.pump()
        # The server's END_STREAM, maybe followed by RST_STREAM(NO_ERROR) for the half the client left open.
        report["stream_ended"] = peer.end_stream_seen and peer.reset in (None, 0)
        report["ok"] = True
    except Exception as error:  # reported, not raised: the test reads the report
        report["error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(report))


if __name__ == "__main__":
    sys.exit(main())
