#!/usr/bin/env python3
"""Writes the hand-written seed inputs of every fuzz target into Fuzz/corpus/TARGET/NAME (docs/fuzzing.md).

Run it again after adding a case here: it (re)writes only its own files and leaves the others, such as the regression
inputs of fixed bugs (`regression-*`), alone. The h2-session seeds need the hpack module (Debian's python3-hpack,
installed with python3-h2 by scripts/install-deps.sh --test).

    /usr/bin/python3 Fuzz/seeds.py
"""
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
CRLF = b"\r\n"


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    directory = os.path.join(ROOT, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as file:
        file.write(data)


def request(line, *fields, body=b""):
    head = line.encode() + CRLF + b"".join(f.encode() + CRLF if isinstance(f, str) else f + CRLF for f in fields)
    return head + CRLF + (body.encode() if isinstance(body, str) else body)


def http1_request():
    t = "http1-request"
    write(t, "get-simple", request("GET / HTTP/1.1", "Host: example.com"))
    write(t, "get-browser", request(
        "GET /api/users/7?fields=name,email&sort=-id HTTP/1.1", "Host: api.example.com:8443",
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0",
        "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "Accept-Language: en-GB,en;q=0.5",
        "Accept-Encoding: gzip, deflate, br", "Cookie: session=abc123; theme=dark", "Connection: keep-alive",
        "If-None-Match: \"33a64df551425fcc55e4d42a148795d9f25f89d4\"", "Cache-Control: max-age=0"))
    write(t, "post-content-length", request("POST /api/users HTTP/1.1", "Host: example.com",
                                            "Content-Type: application/json", "Content-Length: 27",
                                            body='{"name": "Ada", "id": "7"}\n'))
    write(t, "post-chunked-trailers", request("POST /upload HTTP/1.1", "Host: example.com",
                                              "Transfer-Encoding: chunked", "Trailer: X-Checksum",
                                              body="5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 42\r\n\r\n"))
    write(t, "pipelined-three", request("GET /a HTTP/1.1", "Host: x") + request(
        "POST /b HTTP/1.1", "Host: x", "Content-Length: 3", body="abc") + request("DELETE /c HTTP/1.1", "Host: x"))
    write(t, "pipelined-chunked-then-get", request("PUT /p HTTP/1.1", "Host: x", "Transfer-Encoding: chunked",
                                                   body="3\r\nabc\r\n0\r\n\r\n") + request("GET / HTTP/1.1", "Host: x"))
    write(t, "http10-no-host", request("GET /index.html HTTP/1.0", "Connection: keep-alive"))
    write(t, "http12-read-as-11", request("GET / HTTP/1.2", "Host: x"))
    write(t, "http2-version", request("GET / HTTP/2.0", "Host: x"))
    write(t, "lowercase-version", request("GET / http/1.1", "Host: x"))
    write(t, "options-asterisk", request("OPTIONS * HTTP/1.1", "Host: x"))
    write(t, "get-asterisk", request("GET * HTTP/1.1", "Host: x"))
    write(t, "connect-authority", request("CONNECT example.com:443 HTTP/1.1", "Host: example.com:443"))
    write(t, "connect-origin-form", request("CONNECT /x HTTP/1.1", "Host: x"))
    write(t, "absolute-form", request("GET http://example.com/x?y=1 HTTP/1.1", "Host: example.com"))
    write(t, "leading-empty-lines", b"\r\n\n\r\n" + request("GET / HTTP/1.1", "Host: x"))
    write(t, "too-many-empty-lines", b"\r\n" * 12 + request("GET / HTTP/1.1", "Host: x"))
    write(t, "upgrade-websocket", request("GET /chat HTTP/1.1", "Host: x", "Upgrade: websocket",
                                          "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                                          "Sec-WebSocket-Version: 13") + b"\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58")
    write(t, "expect-100", request("POST /p HTTP/1.1", "Host: x", "Expect: 100-continue", "Content-Length: 4",
                                   body="data"))
    write(t, "smuggle-cl-te", request("POST / HTTP/1.1", "Host: x", "Content-Length: 6", "Transfer-Encoding: chunked",
                                      body="0\r\n\r\nGET /admin HTTP/1.1\r\nHost: x\r\n\r\n"))
    write(t, "smuggle-te-cl", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked", "Content-Length: 4",
                                      body="5c\r\nGPOST / HTTP/1.1\r\n\r\n0\r\n\r\n"))
    write(t, "duplicate-content-length", request("POST / HTTP/1.1", "Host: x", "Content-Length: 5",
                                                 "Content-Length: 5", body="hello"))
    write(t, "content-length-list", request("POST / HTTP/1.1", "Host: x", "Content-Length: 5, 5", body="hello"))
    write(t, "content-length-signed", request("POST / HTTP/1.1", "Host: x", "Content-Length: +5", body="hello"))
    write(t, "content-length-negative", request("POST / HTTP/1.1", "Host: x", "Content-Length: -1"))
    write(t, "content-length-overflow", request("POST / HTTP/1.1", "Host: x", "Content-Length: 99999999999999999999"))
    write(t, "content-length-leading-zeros", request("POST / HTTP/1.1", "Host: x", "Content-Length: 0003", body="abc"))
    write(t, "te-chunked-twice", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked, chunked"))
    write(t, "te-gzip-chunked", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: gzip, chunked"))
    write(t, "te-trailing-space", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked ",
                                          body="0\r\n\r\n"))
    write(t, "te-xchunked", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: xchunked"))
    write(t, "te-in-http10", request("POST / HTTP/1.0", "Transfer-Encoding: chunked", body="0\r\n\r\n"))
    write(t, "te-repeated", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked",
                                    "Transfer-Encoding: chunked", body="0\r\n\r\n"))
    write(t, "obs-fold", request("GET / HTTP/1.1", "Host: x", "X-Folded: a", " b"))
    write(t, "space-before-colon", request("GET / HTTP/1.1", "Host: x", "Transfer-Encoding : chunked"))
    write(t, "bare-lf", b"GET / HTTP/1.1\nHost: x\n\n")
    write(t, "bare-cr", b"GET / HTTP/1.1\rHost: x\r\n\r\n")
    write(t, "nul-in-value", request("GET / HTTP/1.1", "Host: x", b"X-A: a\x00b"))
    write(t, "del-and-high-bytes", request("GET / HTTP/1.1", "Host: x", b"X-A: caf\xc3\xa9 \xff\x7f"))
    write(t, "tab-in-value", request("GET / HTTP/1.1", "Host: x", "X-A:\t a\tb \t"))
    write(t, "two-hosts", request("GET / HTTP/1.1", "Host: a", "Host: b"))
    write(t, "missing-host", request("GET / HTTP/1.1", "Accept: */*"))
    write(t, "host-invalid", request("GET / HTTP/1.1", "Host: a b@c"))
    write(t, "host-ipv6", request("GET / HTTP/1.1", "Host: [::1]:8080"))
    write(t, "method-lowercase", request("get / HTTP/1.1", "Host: x"))
    write(t, "method-odd-token", request("M-SEARCH * HTTP/1.1", "Host: 239.255.255.250:1900"))
    write(t, "method-invalid", request("GE(T / HTTP/1.1", "Host: x"))
    write(t, "double-space", b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n")
    write(t, "fragment-in-target", request("GET /a#b HTTP/1.1", "Host: x"))
    write(t, "http09", b"GET /\r\n\r\n")
    write(t, "long-value", request("GET / HTTP/1.1", "Host: x", "X-Long: " + "v" * 3000))
    write(t, "many-fields", request("GET / HTTP/1.1", "Host: x", *[f"X-{i}: {i}" for i in range(110)]))
    write(t, "chunk-size-overflow", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked",
                                            body="ffffffffffffffffff\r\n"))
    write(t, "chunk-extension-bws", request("POST / HTTP/1.1", "Host: x", "Transfer-Encoding: chunked",
                                            body="5 ;x=y\r\nhello\r\n0\r\n\r\n"))
    write(t, "incomplete-head", b"GET /slow HTTP/1.1\r\nHost: x\r\nX-Partial: ")
    # Bytes that are not UTF-8 are read as U+FFFD: the head written out again is three times as long.
    write(t, "non-utf8-value-expands", request("GET / HTTP/1.1", "Host: x", b"X-Bin: " + b"\xff" * 5500))


def response(line, *fields, body=b"", flags=0):
    head = line.encode() + CRLF + b"".join(f.encode() + CRLF if isinstance(f, str) else f + CRLF for f in fields)
    return bytes([flags]) + head + CRLF + (body.encode() if isinstance(body, str) else body)


def http1_response():
    t = "http1-response"
    HEAD, UPGRADE, TIGHT, UNLIMITED = 1, 2, 4, 8
    write(t, "200-content-length", response("HTTP/1.1 200 OK", "Content-Type: application/json",
                                            "Content-Length: 13", body='{"ok": true}\n'))
    write(t, "200-chunked-trailers", response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked",
                                              body="4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nExpires: 0\r\n\r\n"))
    write(t, "200-until-close", response("HTTP/1.1 200 OK", "Content-Type: text/plain", body="until the end"))
    write(t, "200-http10", response("HTTP/1.0 200 OK", "Content-Length: 2", body="ok"))
    write(t, "204-with-length", response("HTTP/1.1 204 No Content", "Content-Length: 5", body="extra"))
    write(t, "304-chunked", response("HTTP/1.1 304 Not Modified", "Transfer-Encoding: chunked", "ETag: \"x\""))
    write(t, "head-with-length", response("HTTP/1.1 200 OK", "Content-Length: 1000", flags=HEAD))
    write(t, "100-then-200", b"\x00HTTP/1.1 100 Continue\r\n\r\n" + response("HTTP/1.1 200 OK", "Content-Length: 0")[1:])
    write(t, "103-early-hints", b"\x00HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
          + response("HTTP/1.1 200 OK", "Content-Length: 0")[1:])
    write(t, "many-interim", b"\x00" + b"HTTP/1.1 102 Processing\r\n\r\n" * 20 + b"HTTP/1.1 200 OK\r\n\r\n")
    write(t, "interim-tight", b"\x04" + b"HTTP/1.1 102 Processing\r\n\r\n" * 3 + b"HTTP/1.1 200 OK\r\n\r\n")
    write(t, "101-upgrade", response("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                                     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
                                     body=b"\x81\x05hello", flags=UPGRADE))
    write(t, "101-unasked", response("HTTP/1.1 101 Switching Protocols", "Upgrade: h2c"))
    write(t, "te-in-http10", response("HTTP/1.0 200 OK", "Transfer-Encoding: chunked", body="0\r\n\r\n"))
    write(t, "cl-list-equal", response("HTTP/1.1 200 OK", "Content-Length: 3, 3", body="abc"))
    write(t, "cl-list-differ", response("HTTP/1.1 200 OK", "Content-Length: 3, 4", body="abcd"))
    write(t, "cl-repeated-differ", response("HTTP/1.1 200 OK", "Content-Length: 3", "Content-Length: 4", body="abc"))
    write(t, "cl-and-te", response("HTTP/1.1 200 OK", "Content-Length: 3", "Transfer-Encoding: chunked",
                                   body="0\r\n\r\n"))
    write(t, "te-gzip", response("HTTP/1.1 200 OK", "Transfer-Encoding: gzip, chunked", body="0\r\n\r\n"))
    write(t, "bare-lf", b"\x00HTTP/1.1 200 OK\nContent-Length: 0\n\n")
    write(t, "obs-fold", response("HTTP/1.1 200 OK", "X-A: a", " folded", "Content-Length: 0"))
    write(t, "nul-in-value", response("HTTP/1.1 200 OK", b"X-A: a\x00", "Content-Length: 0"))
    write(t, "status-999", response("HTTP/1.1 999 Whatever", "Content-Length: 0"))
    write(t, "status-099", response("HTTP/1.1 099 Low", "Content-Length: 0"))
    write(t, "status-no-reason", b"\x00HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")
    write(t, "reason-with-tab-and-utf8", response("HTTP/1.1 404 Nicht\tGefunden \xc3\xa4", "Content-Length: 0"))
    write(t, "status-double-space", b"\x00HTTP/1.1 200  OK\r\nContent-Length: 0\r\n\r\n")
    write(t, "http2-status-line", response("HTTP/2.0 200 OK", "Content-Length: 0"))
    write(t, "bytes-after-response", response("HTTP/1.1 200 OK", "Content-Length: 2", body="okHTTP/1.1 200 OK\r\n\r\n"))
    write(t, "cut-body", response("HTTP/1.1 200 OK", "Content-Length: 10", body="abc"))
    write(t, "cut-head", b"\x00HTTP/1.1 200 OK\r\nContent-Len")
    write(t, "chunk-overflow", response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked",
                                        body="8000000000000000\r\nabc"))
    write(t, "chunk-missing-crlf", response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked",
                                            body="3\r\nabcX\r\n0\r\n\r\n"))
    write(t, "body-over-tight-limit", response("HTTP/1.1 200 OK", body="x" * 200, flags=TIGHT))
    write(t, "cl-over-tight-limit", response("HTTP/1.1 200 OK", "Content-Length: 100", body="x" * 100, flags=TIGHT))
    write(t, "limit-lifted", response("HTTP/1.1 200 OK", "Content-Length: 100", body="x" * 100, flags=TIGHT | UNLIMITED))
    write(t, "many-fields", response("HTTP/1.1 200 OK", *[f"X-{i}: {i}" for i in range(110)]))
    write(t, "empty", b"\x00")


def http1_chunked():
    t = "http1-chunked"
    write(t, "one-chunk", "5\r\nhello\r\n0\r\n\r\n")
    write(t, "several-chunks", "1\r\na\r\n2\r\nbc\r\n3\r\ndef\r\n0\r\n\r\n")
    write(t, "upper-hex", "A\r\n0123456789\r\n0\r\n\r\n")
    write(t, "leading-zeros", "0005\r\nhello\r\n000\r\n\r\n")
    write(t, "extensions", "5;name=value;flag\r\nhello\r\n0;last\r\n\r\n")
    write(t, "quoted-extension", '5;name="a b\\"c"\r\nhello\r\n0\r\n\r\n')
    write(t, "trailers", "5\r\nhello\r\n0\r\nX-Checksum: 1234\r\nX-Other: a b\r\n\r\n")
    write(t, "next-request-after", "3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
    write(t, "bare-lf-size-line", "5\nhello\r\n0\r\n\r\n")
    write(t, "bare-lf-after-data", "5\r\nhello\n0\r\n\r\n")
    write(t, "missing-crlf-after-data", "5\r\nhelloX0\r\n\r\n")
    write(t, "size-overflow", "10000000000000000\r\n")
    write(t, "size-max-int64", "7fffffffffffffff\r\nabc")
    write(t, "negative-size", "-5\r\nhello\r\n0\r\n\r\n")
    write(t, "hex-prefix", "0x5\r\nhello\r\n0\r\n\r\n")
    write(t, "leading-space", " 5\r\nhello\r\n0\r\n\r\n")
    write(t, "trailing-space", "5 \r\nhello\r\n0\r\n\r\n")
    write(t, "empty-size-line", "\r\nhello\r\n0\r\n\r\n")
    write(t, "declared-longer", "ff\r\nshort\r\n")
    write(t, "last-chunk-no-final-crlf", "0\r\n")
    write(t, "trailer-obs-fold", "0\r\nX-A: a\r\n b\r\n\r\n")
    write(t, "trailer-invalid-name", "0\r\nX A: a\r\n\r\n")
    write(t, "trailer-bare-cr", "0\r\nX-A: a\rb\r\n\r\n")
    write(t, "extension-with-cr", "5;a=\r\r\nhello\r\n0\r\n\r\n")
    write(t, "many-small-chunks", "".join("1\r\nx\r\n" for _ in range(200)) + "0\r\n\r\n")
    write(t, "long-extension", "1;" + "e" * 5000 + "\r\nx\r\n0\r\n\r\n")


def fields(*pairs):
    return "\n".join(f"{n}\t{v}" if v is not None else n for n, v in pairs).encode("utf-8", "surrogateescape")


def h2_fields():
    t = "h2-fields"
    base = [(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", "/")]
    write(t, "get-simple", fields(*base))
    write(t, "get-browser", fields((":method", "GET"), (":scheme", "https"), (":authority", "api.example.com:8443"),
                                   (":path", "/api/users/7?x=1"), ("user-agent", "curl/8.5.0"), ("accept", "*/*"),
                                   ("accept-encoding", "gzip, br"), ("te", "trailers")))
    write(t, "post-content-length", fields((":method", "POST"), (":scheme", "https"), (":authority", "x"),
                                           (":path", "/upload"), ("content-type", "application/json"),
                                           ("content-length", "27")))
    write(t, "connect-plain", fields((":method", "CONNECT"), (":authority", "example.com:443")))
    write(t, "connect-with-path", fields((":method", "CONNECT"), (":authority", "x:443"), (":path", "/")))
    write(t, "connect-extended", fields((":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"),
                                        (":path", "/chat"), (":authority", "x"), ("sec-websocket-version", "13")))
    write(t, "protocol-without-connect", fields(*base, (":protocol", "websocket")))
    write(t, "cookies-split", fields(*base, ("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2"),
                                     ("cookie", "c=3")))
    write(t, "host-and-authority", fields(*base, ("host", "example.com")))
    write(t, "host-differs", fields(*base, ("host", "evil.com")))
    write(t, "host-only", fields((":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "x:80")))
    write(t, "two-hosts", fields((":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "a"), ("host", "a")))
    write(t, "no-authority", fields((":method", "GET"), (":scheme", "https"), (":path", "/")))
    write(t, "te-gzip", fields(*base, ("te", "gzip")))
    write(t, "connection-specific", fields(*base, ("connection", "keep-alive"), ("transfer-encoding", "chunked")))
    write(t, "upgrade", fields(*base, ("upgrade", "h2c")))
    write(t, "uppercase-name", fields(*base, ("Content-Type", "text/plain")))
    write(t, "pseudo-after-regular", fields((":method", "GET"), ("accept", "*/*"), (":scheme", "https"),
                                            (":authority", "x"), (":path", "/")))
    write(t, "duplicate-path", fields(*base, (":path", "/admin")))
    write(t, "unknown-pseudo", fields(*base, (":status", "200")))
    write(t, "value-with-cr", fields(*base, ("x-a", "a\rb")))
    write(t, "value-with-nul", fields(*base, ("x-a", "a\0b")))
    write(t, "value-leading-space", fields(*base, ("x-a", " a")))
    write(t, "value-trailing-tab", fields(*base, ("x-a", "a\t")))
    write(t, "options-asterisk", fields((":method", "OPTIONS"), (":scheme", "https"), (":authority", "x"),
                                        (":path", "*")))
    write(t, "get-asterisk", fields((":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", "*")))
    write(t, "path-without-slash", fields((":method", "GET"), (":scheme", "https"), (":authority", "x"),
                                          (":path", "index.html")))
    write(t, "path-with-space", fields((":method", "GET"), (":scheme", "https"), (":authority", "x"),
                                       (":path", "/a b")))
    write(t, "path-non-ascii", fields((":method", "GET"), (":scheme", "https"), (":authority", "x"),
                                      (":path", "/caf\u00e9")))
    write(t, "authority-userinfo", fields((":method", "GET"), (":scheme", "https"), (":authority", "user@x"),
                                          (":path", "/")))
    write(t, "authority-ipv6", fields((":method", "GET"), (":scheme", "https"), (":authority", "[::1]:8443"),
                                      (":path", "/")))
    write(t, "content-length-differ", fields(*base, ("content-length", "1"), ("content-length", "2")))
    write(t, "content-length-long", fields(*base, ("content-length", "1234567890123456789")))
    write(t, "content-length-signed", fields(*base, ("content-length", "+1")))
    write(t, "scheme-invalid", fields((":method", "GET"), (":scheme", "h ttp"), (":authority", "x"), (":path", "/")))
    write(t, "method-lowercase", fields((":method", "get"), (":scheme", "https"), (":authority", "x"), (":path", "/")))
    write(t, "method-with-space", fields((":method", "GET /x"), (":scheme", "https"), (":authority", "x"),
                                         (":path", "/")))
    write(t, "empty-name", fields(*base, ("", "v")))
    write(t, "trailers-only", fields(("x-checksum", "1"), ("x-other", "2")))


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


DATA, HEADERS, PRIORITY, RST, SETTINGS, PUSH, PING, GOAWAY, WINDOW, CONTINUATION = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
END_STREAM, END_HEADERS, PADDED, PRIO = 0x1, 0x4, 0x8, 0x20


def h2_session():
    try:
        import hpack
    except ImportError:
        print("seeds.py: hpack is missing (apt-get install python3-hpack): h2-session seeds skipped", file=sys.stderr)
        return
    t = "h2-session"

    def block(headers):
        return hpack.Encoder().encode(headers)

    get = [(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", "/")]
    settings = frame(SETTINGS, 0, 0)
    ack = frame(SETTINGS, 1, 0)
    write(t, "get", settings + ack + frame(HEADERS, END_STREAM | END_HEADERS, 1, block(get)))
    write(t, "post-body", settings + frame(HEADERS, END_HEADERS, 1, block(
        [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/upload"),
         ("content-length", "10")])) + frame(DATA, 0, 1, b"hello") + frame(DATA, END_STREAM, 1, b"world"))
    write(t, "body-beyond-content-length", settings + frame(HEADERS, END_HEADERS, 1, block(
        [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/"),
         ("content-length", "2")])) + frame(DATA, END_STREAM, 1, b"hello"))
    write(t, "three-streams", settings + b"".join(
        frame(HEADERS, END_STREAM | END_HEADERS, s, block(get[:3] + [(":path", f"/s{s}")])) for s in (1, 3, 5)))
    write(t, "trailers", settings + frame(HEADERS, END_HEADERS, 1, block(
        [(":method", "POST"), (":scheme", "https"), (":authority", "x"), (":path", "/")]))
          + frame(DATA, 0, 1, b"abc") + frame(HEADERS, END_STREAM | END_HEADERS, 1, block([("x-checksum", "1")])))
    write(t, "reset-after-headers", settings + frame(HEADERS, END_HEADERS, 1, block(get))
          + frame(RST, 0, 1, struct.pack(">I", 8)))
    write(t, "rapid-reset", settings + b"".join(
        frame(HEADERS, END_HEADERS | END_STREAM, s, block(get)) + frame(RST, 0, s, struct.pack(">I", 8))
        for s in range(1, 60, 2)))
    write(t, "ping-settings-window", settings + frame(PING, 0, 0, b"12345678")
          + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 1) + struct.pack(">HI", 5, 16384))
          + frame(WINDOW, 0, 0, struct.pack(">I", 1 << 20))
          + frame(HEADERS, END_STREAM | END_HEADERS, 1, block(get)) + frame(WINDOW, 0, 1, struct.pack(">I", 100)))
    write(t, "zero-window", frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0))
          + frame(HEADERS, END_STREAM | END_HEADERS, 1, block(get)))
    write(t, "goaway", settings + frame(HEADERS, END_STREAM | END_HEADERS, 1, block(get))
          + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)))
    whole = block(get + [("x-long", "v" * 300)])
    write(t, "continuation", settings + frame(HEADERS, END_STREAM, 1, whole[:100]) + frame(CONTINUATION, 0, 1, whole[100:200])
          + frame(CONTINUATION, END_HEADERS, 1, whole[200:]))
    write(t, "continuation-flood", settings + frame(HEADERS, END_STREAM, 1, block(get))
          + b"".join(frame(CONTINUATION, 0, 1, hpack.Encoder().encode([("x-a", "b")])) for _ in range(20)))
    write(t, "padded-priority", settings + frame(HEADERS, END_STREAM | END_HEADERS | PADDED | PRIO, 1,
                                                 b"\x03" + struct.pack(">IB", 0, 15) + block(get) + b"\0\0\0")
          + frame(PRIORITY, 0, 3, struct.pack(">IB", 1, 200)))
    write(t, "uppercase-field", settings + frame(HEADERS, END_STREAM | END_HEADERS, 1, block(get + [("X-Upper", "1")])))
    write(t, "connection-field", settings + frame(HEADERS, END_STREAM | END_HEADERS, 1,
                                                  block(get + [("connection", "close")])))
    write(t, "extended-connect", settings + frame(HEADERS, END_HEADERS, 1, block(
        [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "x"),
         (":path", "/chat"), ("sec-websocket-version", "13")])) + frame(DATA, 0, 1, b"\x81\x82abcd\x01\x02"))
    write(t, "plain-connect", settings + frame(HEADERS, END_HEADERS, 1, block(
        [(":method", "CONNECT"), (":authority", "example.com:443")])))
    write(t, "missing-path", settings + frame(HEADERS, END_STREAM | END_HEADERS, 1, block(get[:3])))
    write(t, "push-promise-from-client", settings + frame(PUSH, END_HEADERS, 1, struct.pack(">I", 2) + block(get)))
    write(t, "data-on-idle-stream", settings + frame(DATA, END_STREAM, 7, b"x"))
    write(t, "even-stream-id", settings + frame(HEADERS, END_STREAM | END_HEADERS, 2, block(get)))
    write(t, "hpack-table-size-update", settings + frame(HEADERS, END_STREAM | END_HEADERS, 1,
                                                         b"\x3f\xe1\x1f" + block(get)))
    write(t, "bad-frame-size", settings + frame(PING, 0, 0, b"123"))


def h2_response():
    try:
        import hpack
    except ImportError:
        print("seeds.py: hpack is missing (apt-get install python3-hpack): h2-response seeds skipped", file=sys.stderr)
        return
    t = "h2-response"

    def block(headers):
        return hpack.Encoder().encode(headers)

    def head(stream, status, *fields, flags=END_HEADERS):
        return frame(HEADERS, flags, stream, block([(":status", status)] + list(fields)))

    start = frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 100)) + frame(SETTINGS, 1, 0)
    write(t, "three-answers", start + head(1, "200", ("content-type", "text/plain"), ("content-length", "5"))
          + frame(DATA, END_STREAM, 1, b"hello") + head(3, "201", flags=END_HEADERS | END_STREAM)
          + head(5, "200", ("content-length", "100"), flags=END_HEADERS | END_STREAM))
    write(t, "interim-then-final", start + head(1, "100") + head(1, "103", ("link", "</a.css>; rel=preload"))
          + head(1, "204", flags=END_HEADERS | END_STREAM))
    write(t, "trailers", start + head(1, "200") + frame(DATA, 0, 1, b"abc")
          + frame(HEADERS, END_HEADERS | END_STREAM, 1, block([("x-checksum", "1")])))
    write(t, "trailers-with-pseudo", start + head(1, "200") + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                                                                     block([(":status", "200")])))
    for name, status in [("status-000", "000"), ("status-099", "099"), ("status-600", "600"), ("status-999", "999"),
                         ("status-letters", "2x0"), ("status-long", "2000")]:
        write(t, name, start + head(1, status, flags=END_HEADERS | END_STREAM))
    write(t, "status-twice", start + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                                           block([(":status", "200"), (":status", "404")])))
    write(t, "status-missing", start + frame(HEADERS, END_HEADERS | END_STREAM, 1, block([("server", "x")])))
    write(t, "status-after-field", start + frame(HEADERS, END_HEADERS | END_STREAM, 1,
                                                 block([("server", "x"), (":status", "200")])))
    write(t, "request-pseudo-in-response", start + head(1, "200", (":path", "/"), flags=END_HEADERS | END_STREAM))
    write(t, "uppercase-field", start + head(1, "200", ("X-Upper", "1"), flags=END_HEADERS | END_STREAM))
    write(t, "connection-field", start + head(1, "200", ("connection", "close"), flags=END_HEADERS | END_STREAM))
    write(t, "value-with-nul", start + head(1, "200", ("x-a", "a\0b"), flags=END_HEADERS | END_STREAM))
    write(t, "body-beyond-length", start + head(1, "200", ("content-length", "2")) + frame(DATA, END_STREAM, 1, b"hello"))
    write(t, "negative-length", start + head(1, "200", ("content-length", "-1")) + frame(DATA, END_STREAM, 1, b""))
    write(t, "body-for-head", start + head(5, "200", ("content-length", "3")) + frame(DATA, END_STREAM, 5, b"abc"))
    write(t, "reset-and-goaway", start + head(1, "200") + frame(RST, 0, 3, struct.pack(">I", 2))
          + frame(GOAWAY, 0, 0, struct.pack(">II", 1, 0)) + frame(DATA, END_STREAM, 1, b"late"))
    write(t, "push-promise", start + frame(PUSH, END_HEADERS, 1, struct.pack(">I", 2) + block(
        [(":method", "GET"), (":scheme", "https"), (":authority", "x"), (":path", "/pushed")])))
    write(t, "unopened-stream", start + head(7, "200", flags=END_HEADERS | END_STREAM))
    write(t, "window-and-ping", start + frame(WINDOW, 0, 0, struct.pack(">I", 1 << 30)) + frame(PING, 0, 0, b"abcdefgh")
          + frame(WINDOW, 0, 3, struct.pack(">I", 0)) + head(3, "200", flags=END_HEADERS | END_STREAM))
    whole = block([(":status", "200"), ("x-long", "v" * 300)])
    write(t, "continuation", start + frame(HEADERS, END_STREAM, 1, whole[:50]) + frame(CONTINUATION, 0, 1, whole[50:200])
          + frame(CONTINUATION, END_HEADERS, 1, whole[200:]))
    write(t, "padded-data", start + head(1, "200") + frame(DATA, END_STREAM | PADDED, 1, b"\x04body\0\0\0\0"))
    write(t, "empty-data-flood", start + head(1, "200") + frame(DATA, 0, 1) * 120)
    write(t, "no-settings", head(1, "200", flags=END_HEADERS | END_STREAM))


def path():
    t = "path"
    cases = {
        "root": "/", "plain": "/api/users/7", "query": "/api/users?sort=-id&fields=a,b&q=%20x",
        "dot-segments": "/a/./b/../c", "climb-above-root": "/../etc/passwd", "climb-deep": "/a/b/../../../x",
        "encoded-dots": "/%2e%2e/%2E%2e/x", "encoded-slash": "/a%2Fb", "encoded-backslash": "/a%5cb",
        "backslash": "/a\\b", "encoded-nul": "/a%00b", "encoded-control": "/a%0d%0ab", "overlong-dot": "/%C0%AE%C0%AE/x",
        "dot-params": "/a/..;/b", "dot-params-single": "/a/.;x/b", "semicolon-segment": "/a;b=c/d",
        "empty-segments": "//a///b//", "trailing-slash": "/a/b/", "unreserved-escapes": "/%7Euser/%41%62%2D",
        "reserved-escapes": "/a%2cb%3Ac%40", "lowercase-escape": "/a%3fb", "invalid-escape": "/a%zz",
        "cut-escape": "/a%4", "fragment": "/a#frag", "asterisk": "*", "absolute": "http://evil.example/x",
        "authority": "example.com:443", "double-slash-start": "//evil.example/x", "utf8-raw": "/caf\u00e9",
        "utf8-escaped": "/%E2%82%AC/%C3%A9", "bad-utf8-escaped": "/%FF%FE", "query-question": "/a?b?c",
        "query-bad-escape": "/a?x=%", "query-space": "/a?x= y", "dot-at-end": "/a/b/.", "dotdot-at-end": "/a/b/..",
        "dots-only": "/...", "many-dots": "/a/..../b", "empty": "", "sub-delims": "/!$&'()*+,;=:@",
    }
    for name, text in cases.items():
        write(t, name, text.encode())


def routing():
    t = "routing"
    cases = {
        "health": "GET\n\n/health", "health-trailing-slash-post": "POST\n\n/health/",
        "health-trailing-slash-get": "GET\n\n/health/", "user": "GET\n\n/users/7", "user-put": "PUT\n\n/users/7",
        "user-post-405": "POST\n\n/users/7", "user-post-param": "GET\n\n/users/7/posts/9",
        "user-profile-delete": "DELETE\n\n/users/7/profile", "user-empty-param": "GET\n\n/users//posts/9",
        "api-rewrite": "GET\n\n/api/orders?page=2", "api-host": "GET\nadmin.example.com\n/api/admin/users",
        "api-host-port-case": "GET\nADMIN.Example.COM.:8443\n/api/admin", "api-host-other": "GET\nother\n/api/admin/x",
        "api-prefix-boundary": "GET\n\n/apix", "static": "GET\n\n/static/css/site.css",
        "static-root": "GET\n\n/static/", "static-head": "HEAD\n\n/static/a", "ipv6-host": "GET\n[::1]:8080\n/x",
        "connect": "CONNECT\n\nexample.com:443", "traversal": "GET\n\n/static/../../etc/passwd",
        "encoded-traversal": "GET\n\n/%2e%2e/x", "options-asterisk": "OPTIONS\n\n*",
        "options-root": "OPTIONS\n\n/", "patch-405": "PATCH\n\n/nothing", "messy-slashes": "GET\n\n//users//7//",
        "escaped-digit": "GET\n\n/users/%37", "escaped-slash": "GET\n\n/users/7%2F8", "absolute": "GET\n\nhttp://x/y",
        "query-only": "GET\n\n/?", "lowercase-method": "get\n\n/users/7",
    }
    for name, text in cases.items():
        write(t, name, text.encode())


def url():
    t = "url"
    cases = [
        "http://example.com", "https://example.com:8443/base/path", "http://[::1]:8080/v1", "http://127.0.0.1:9000/",
        "HTTP://EXAMPLE.COM/", "http://user:pw@host/", "http://host:0", "http://host:65535/x", "http://host:65536",
        "http://host:99999999", "ftp://x/", "http:/x", "http://", "http://host/a/../b", "http://host/a?q=1",
        "http://host#frag", "http://[::1", "http://[::1]x", "https://host:/", "http://ho st/", "http://host:80:90/",
        "http://[fe80::1%25eth0]/", "http://host/%2F", "http://host/a//b/", "https://h_o-s.t/x/", "http://[]/",
        "http://:80/", "http://host?x", "https://xn--caf-dma.example/", "http://caf\u00e9.example/",
    ]
    for index, text in enumerate(cases):
        write(t, f"url-{index:02d}", text.encode())


def size_duration():
    t = "size-duration"
    cases = [
        "0", "1", "1048576", "512KiB", "10MiB", "1GiB", "1.5MiB", "10MB", "100KB", "1B", "0.5KiB", "16 KiB",
        "999999999999999999", "9999999999999999999", "8589934592GiB", "250ms", "10s", "2m", "1.5s", "0.001s",
        "0.0000000001s", "-1s", "1h", " 10s ", "10 s", "1e3", ".5s", "5.s", "1,000", "0ms", "1.123456789s",
        "153722867280912930m",
    ]
    for index, text in enumerate(cases):
        write(t, f"value-{index:02d}", text.encode())


def config():
    t = "config"
    write(t, "shipped-like", """\
server:
  listen: ["127.0.0.1:8080"]
  threads: 0
  http2: true
  compression: { gzip: true, min_bytes: 1024 }
  limits:
    max_header_bytes: 16384
    max_headers: 100
    max_body_bytes: 10MiB
    header_timeout: 10s
    body_timeout: 30s
    idle_timeout: 60s
    max_connections: 10000
    drain_timeout: 30s
admin:
  listen: "127.0.0.1:9090"
logging:
  level: info
  format: json
  access_log: true
  output: stdout
  redact_headers: [Authorization, Cookie, X-Api-Key]
upstreams:
  catalog:
    stub: { status: 200, headers: { Content-Type: application/json }, body_file: stubs/user.json }
  users:
    stub:
      status: 200
      body: '{"id": "7"}'
      delay: 20ms
  slow:
    stub:
      status: 200
      latency: { distribution: normal, mean: 200ms, stddev: 50ms, min: 50ms, max: 500ms }
  bulk:
    stub: { status: 200, body_bytes: 4096, latency: { distribution: uniform, min: 5ms, max: 15ms } }
routes:
  - name: user-by-id
    match: { path_params: "/api/users/{id}", methods: [GET, PUT, DELETE] }
    upstream: users
    timeout: 2s
  - name: users
    match: { path_prefix: /api/users, methods: [GET, POST] }
    upstream: users
    rewrite: { strip_prefix: /api }
  - name: catalog
    match: { path_prefix: /api/catalog, methods: [GET] }
    upstream: catalog
    coalesce: true
    coalesce_vary: [Accept, Accept-Encoding]
  - name: slow
    match: { path: /api/slow }
    upstream: slow
  - name: bulk
    match: { path_prefix: /bulk, methods: [GET] }
    upstream: bulk
""")
    write(t, "real-upstream", """\
server:
  listen: ["127.0.0.1:8080"]
  trusted_proxies: ["10.0.0.0/8", "2001:db8::/32"]
upstreams:
  users:
    base_url: http://127.0.0.1:18080/v1
    servers: ["10.0.0.11:18080", "users-2.internal:18080"]
    headers: { X-From: moya-gateway }
    timeout: { connect: 1s, response: 5s }
    pool: { max_connections: 64, http2: auto, idle_timeout: 50s, max_wait: 10s }
    circuit_breaker: { failures: 5, open_for: 10s }
    health_check: { path: /healthz, interval: 5s, timeout: 1s }
    access_token: { type: bearer, token: "${API_TOKEN}" }
    validation: none
routes:
  - name: users
    match: { path_prefix: /api/users, methods: [GET, HEAD, POST] }
    upstream: users
    rewrite: { strip_prefix: /api }
    coalesce: true
    timeout: 3s
    retries: { attempts: 2, statuses: [502, 503], backoff: 100ms }
    rate_limit: { requests: 20, per: 1s, burst: 40 }
  - name: live
    match: { path_prefix: /api/live, methods: [GET] }
    upstream: users
    websocket: { idle_timeout: 10m }
""")
    write(t, "tls-and-keys", """\
server:
  listen: ["127.0.0.1:8080", "[::1]:8080"]
  tls:
    listen: ["127.0.0.1:8443"]
    certificate: tls/server.pem
    private_key: "${file:secrets/empty}tls/server.key"
clients:
  api_keys:
    header: X-Api-Key
    keys: { billing: "${API_TOKEN}", web: "${file:secrets/token}" }
upstreams:
  billing:
    base_url: https://billing.internal:8443
    tls: { verify: true, ca_file: tls/ca.pem }
    pool: { http2: always }
    credentials: { user: svc, password: "${file:secrets/token}", preemptive: true }
routes:
  - name: billing
    match: { path_prefix: /billing, methods: [GET, POST], host: billing.example.com }
    upstream: billing
    clients: [billing]
    rewrite: { strip_prefix: /billing, add_prefix: /api/v2 }
""")
    write(t, "minimal", "upstreams:\n  a: { stub: { body: ok } }\nroutes:\n  - { name: r, match: { path: / }, upstream: a }\n")
    write(t, "empty", "")
    write(t, "comments-only", "# nothing here\n# at all\n")
    write(t, "syntax-error", "server:\n  listen: [127.0.0.1:8080\nroutes: [\n")
    write(t, "tabs", "server:\n\tlisten: 127.0.0.1:8080\n")
    write(t, "duplicate-key", "upstreams:\n  a: { stub: {} }\n  a: { stub: {} }\nroutes: []\n")
    write(t, "anchors-aliases", """\
upstreams:
  a: &stub { stub: { status: 200, body: ok } }
  b: *stub
routes:
  - &route { name: r1, match: { path: /a }, upstream: a }
  - { <<: *route, name: r2, match: { path: /b } }
""")
    write(t, "alias-bomb", "a: &a [x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b]\n"
                           "d: &d [*c, *c, *c, *c, *c]\nupstreams: *d\nroutes: *d\n")
    write(t, "secret-in-bad-port", "server:\n  listen: [\"127.0.0.1:${API_TOKEN}\"]\nupstreams: {}\nroutes: []\n")
    write(t, "secret-file-in-bad-values", """\
server:
  threads: "${file:secrets/token}"
  limits: { max_body_bytes: "${API_TOKEN}", header_timeout: "${file:secrets/token}" }
upstreams:
  u: { base_url: "${API_TOKEN}", stub: { status: "${API_TOKEN}" } }
routes:
  - { name: "${API_TOKEN}", match: { path: "/${file:secrets/token}" }, upstream: "${API_TOKEN}" }
""")
    write(t, "secret-files-unusable", """\
upstreams:
  a: { stub: { body: "${file:secrets/binary}${file:secrets/large}${file:missing}${file:}" } }
  b: { stub: { body_file: "${file:secrets/token}" } }
routes:
  - { name: r, match: { path: / }, upstream: a }
""")
    write(t, "device-files", """\
upstreams:
  a: { stub: { body: "${file:/dev/zero}", body_file: /dev/urandom } }
logging: { output: /dev/full }
server: { tls: { listen: ["127.0.0.1:8443"], certificate: /proc/self/mem, private_key: /dev/stdin } }
routes: []
""")
    write(t, "environment-forms", """\
upstreams:
  a: { base_url: "${UPSTREAM_URL}", headers: { X-A: "$${literal} $$ ${EMPTY} ${PORT}", X-B: "${NOPE}" } }
  b: { stub: { body: "${unterminated" } }
  c: { stub: { body: "${1BAD}" } }
server: { listen: "${LISTEN}" }
routes:
  - { name: r, match: { path: / }, upstream: a }
""")
    write(t, "route-problems", """\
upstreams:
  s: { stub: { status: 200 } }
  h: { base_url: "http://h:80/base/" }
routes:
  - { name: a, match: { path_prefix: /api }, upstream: s }
  - { name: b, match: { path_prefix: /api }, upstream: s }
  - { name: c, match: { path: /x, path_prefix: /x }, upstream: s }
  - { name: d, match: { path: "/a/../b", methods: [get, "GET /"] }, upstream: missing }
  - { name: e, match: { path_params: "/u/{id}/{id}" }, upstream: h, websocket: true, coalesce: true }
  - { name: f, match: { path_params: "/u/{}" }, upstream: s, websocket: true }
  - { name: g, match: { host: "EXAMPLE.com:80" }, upstream: h, rewrite: { strip_prefix: x, add_prefix: "/%2F" } }
  - { name: "bad name", upstream: s }
""")
    write(t, "numbers-and-types", """\
server:
  threads: 99999999999999999999
  http2: yes
  io_uring: maybe
  compression: { gzip: 1, min_bytes: -1 }
  limits: { max_header_bytes: 1GiB, max_headers: 0, header_timeout: 1.5, max_connections: [1] }
upstreams:
  a: { stub: { status: 99, error_rate: 1.5, error_status: 200, delay: 1h, body_bytes: 12 } }
routes: {}
""")
    write(t, "logging-outputs", """\
logging:
  level: verbose
  format: xml
  output: logs/gateway.log
  redact_headers: ["Bad Header", "X-\\nInjected"]
upstreams: {}
routes: []
""")
    write(t, "control-characters", "upstreams:\n  \"a\\nb\": { stub: { body: \"x\\ty\\u2028\" } }\n"
                                   "routes:\n  - { name: \"r\\r\", match: { path: \"/\\u0000\" }, upstream: \"a\\nb\" }\n")
    write(t, "multi-document", "upstreams: {}\nroutes: []\n---\nupstreams: {}\n")
    write(t, "bom-and-crlf", "\ufeffupstreams:\r\n  a: { stub: {} }\r\nroutes:\r\n  - { name: r, match: { path: / }, "
                             "upstream: a }\r\n")
    write(t, "not-a-mapping", "- just\n- a\n- list\n")
    write(t, "unknown-keys", "servers: {}\nupstreams: { a: { stub: {}, bogus: 1 } }\nroutes: [{ name: r, extra: 1, "
                             "match: { path: /, regex: x }, upstream: a }]\n")


def main():
    http1_request()
    http1_response()
    http1_chunked()
    h2_fields()
    h2_session()
    h2_response()
    path()
    routing()
    url()
    size_duration()
    config()


if __name__ == "__main__":
    main()
