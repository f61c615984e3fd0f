"""Raw HTTP/2 frames over a socket, for the test suites' hostile clients (h2spec.py, h2_abuse.py).

Frames are written and read raw (hyperframe + hpack from Debian's python3-h2), so a client can send what a
well-behaved client library refuses to. `RawConnection` reads and parses frames with a deadline; each script adds
how it sends (its own failure semantics) on top.
"""
import time

import hpack
from hyperframe.frame import Frame, HeadersFrame, SettingsFrame

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 5: "STREAM_CLOSED",
          6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


def request(path, method="GET", extra=(), authority="localhost"):
    """A request's pseudo-header fields (plain http), then `extra`."""
    return [(":method", method), (":scheme", "http"), (":authority", authority), (":path", path)] + list(extra)


class RawConnection:
    """One raw HTTP/2 connection on a connected socket: the preface and SETTINGS are sent at once; frames read are
    kept in `frames` (a HEADERS frame's decoded fields in `decoded`); `closed` once the peer closed or reset it."""

    def __init__(self, sock, settings=None):
        self.sock = sock
        self.buffer = b""
        self.closed = False
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.frames = []
        self.send(PREFACE + SettingsFrame(0, settings=settings or {}).serialize())

    def send(self, data):
        raise NotImplementedError

    def read(self, until, timeout=5.0):
        """Reads frames (ACKing SETTINGS) until `until(frame)` holds for one, the peer closes, or `timeout` passes.
        Returns the matching frame or None."""
        deadline = time.monotonic() + timeout
        while True:
            while len(self.buffer) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) < 9 + length:
                    break
                frame.parse_body(memoryview(self.buffer[9:9 + length]))
                self.buffer = self.buffer[9 + length:]
                self.frames.append(frame)
                if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                    self.send(SettingsFrame(0, flags=["ACK"]).serialize())
                if isinstance(frame, HeadersFrame):
                    try:
                        frame.decoded = dict(self.decoder.decode(frame.data))
                    except Exception:
                        frame.decoded = {}
                if until(frame):
                    return frame
            left = deadline - time.monotonic()
            if self.closed or left <= 0:
                return None
            try:
                self.sock.settimeout(max(0.005, left))
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            except OSError:
                self.closed = True
                return None
            if not data:
                self.closed = True
                return None
            self.buffer += data
