#!/usr/bin/env python3
"""WebSocket peers for the gateway's end-to-end tests, built on the `websockets` library (a real, strict RFC 6455
implementation: it checks the accept key, masking, framing and the close handshake).

server: an upstream on 127.0.0.1 (TLS with --cert/--key). It writes its port to --port-file and, for every
    handshake, one JSON line to --record: the path and the request headers. By path:
      /echo...   echoes every message, text or binary, until the client closes
      /bye...    answers the first message with "bye" and closes with code 4001
      /refuse... refuses the handshake with 403 and a body
      /silent... reads and says nothing
    After each connection it writes one more JSON line to --record: the path and the close code and reason it was
    sent (null when the connection ended without a close frame).
      /stall...  neither reads nor says anything
      /flood?mb=N sends N binary messages of 1 MiB as fast as the connection takes them (writing how many it has
                 sent to --progress after each), then closes
client: connects to --url (verifying TLS with --ca), sends --messages text messages and --messages binary ones of
    --size bytes, checks every echo, pings and awaits the pong, closes normally, and prints one JSON line with what
    happened. --expect-bye sends one message and expects "bye" and code 4001 instead; --wait-close N sends one
    message and waits up to N seconds for the connection to close, reporting when and the close code it got. No compression is negotiated, so
    the tunnel carries every byte. Every wait is bounded.
"""
import argparse
import asyncio
import http
import json
import os
import ssl
import sys
import time

import websockets


async def serve(args):
    record = open(args.record, "a", buffering=1)

    async def process_request(path, headers):
        record.write(json.dumps({"path": path, "headers": [[k, v] for k, v in headers.raw_items()]}) + "\n")
        if path.startswith("/refuse"):
            return http.HTTPStatus.FORBIDDEN, [("Content-Type", "text/plain"), ("X-Refused", "yes")], b"no websocket for you\n"
        return None

    async def handler(ws, path):
        try:
            if path.startswith("/bye"):
                await ws.recv()
                await ws.send("bye")
                await ws.close(code=4001, reason="bye")
            elif path.startswith("/flood"):
                mb = int(path.split("mb=")[1].split("&")[0])
                chunk = bytes(1 << 20)
                for sent in range(1, mb + 1):
                    await ws.send(chunk)
                    if args.progress:
                        with open(args.progress, "w") as f:
                            f.write(str(sent))
                await ws.close()
            elif path.startswith("/stall"):
                await asyncio.sleep(args.lifetime)
            elif path.startswith("/silent"):
                async for _ in ws:
                    pass
            else:
                async for message in ws:
                    await ws.send(message)
        except websockets.ConnectionClosed:
            pass
        # How the connection ended, as its peer (the gateway) said: the close frame received, if any.
        record.write(json.dumps({"closed": path, "code": ws.close_code, "reason": ws.close_reason}) + "\n")

    context = None
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
    async with websockets.serve(handler, "127.0.0.1", 0, process_request=process_request, ssl=context,
                                max_size=None, ping_interval=None, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.rename(args.port_file + ".tmp", args.port_file)
        await asyncio.sleep(args.lifetime)


async def client(args):
    context = None
    if args.url.startswith("wss:"):
        context = ssl.create_default_context(cafile=args.ca)
    headers = [tuple(h.split(":", 1)) for h in args.header]
    result = {"ok": False}
    try:
        async with websockets.connect(args.url, ssl=context, extra_headers=[(k.strip(), v.strip()) for k, v in headers],
                                      max_size=None, ping_interval=None, open_timeout=10, close_timeout=5,
                                      compression=None) as ws:
            result["response_headers"] = [[k, v] for k, v in ws.response_headers.raw_items()]
            if args.wait_close:
                await ws.send("anyone there?")
                started = time.monotonic()
                try:
                    await asyncio.wait_for(ws.recv(), args.wait_close)
                except websockets.ConnectionClosed as closed:
                    result["closed_after"] = time.monotonic() - started
                    result["close_code"] = closed.rcvd.code if closed.rcvd else None
                    result["close_reason"] = closed.rcvd.reason if closed.rcvd else None
                    result["ok"] = True
            elif args.expect_bye:
                await ws.send("hello")
                result["reply"] = await asyncio.wait_for(ws.recv(), 10)
                try:
                    await asyncio.wait_for(ws.recv(), 10)
                except websockets.ConnectionClosed as closed:
                    result["close_code"] = closed.rcvd.code if closed.rcvd else None
                result["ok"] = result["reply"] == "bye" and result.get("close_code") == 4001
            else:
                echoed = 0
                for i in range(args.messages):
                    text = f"message {i} " + "x" * (i % 7)
                    await ws.send(text)
                    if await asyncio.wait_for(ws.recv(), 10) != text:
                        raise RuntimeError(f"text echo {i} differs")
                    payload = bytes((i + j) % 251 for j in range(args.size))
                    await ws.send(payload)
                    if await asyncio.wait_for(ws.recv(), 30) != payload:
                        raise RuntimeError(f"binary echo {i} differs")
                    echoed += 2
                pong = await ws.ping(b"are you there")
                await asyncio.wait_for(pong, 10)
                result["echoed"] = echoed
                result["pong"] = True
                await ws.close()
                result["close_code"] = ws.close_code
                result["ok"] = ws.close_code == 1000
    except websockets.InvalidStatusCode as refused:
        result["status"] = refused.status_code
        result["refused_headers"] = [[k, v] for k, v in refused.headers.raw_items()] if hasattr(refused, "headers") else []
    except Exception as error:  # reported, not raised: the test reads the line
        result["error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(result), flush=True)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("--port-file", required=True)
    s.add_argument("--record", required=True)
    s.add_argument("--cert")
    s.add_argument("--key")
    s.add_argument("--lifetime", type=float, default=120)
    s.add_argument("--progress")
    c = sub.add_parser("client")
    c.add_argument("--url", required=True)
    c.add_argument("--ca")
    c.add_argument("--messages", type=int, default=3)
    c.add_argument("--size", type=int, default=1024)
    c.add_argument("--header", action="append", default=[])
    c.add_argument("--expect-bye", action="store_true")
    c.add_argument("--wait-close", type=float, default=0)
    args = parser.parse_args()
    asyncio.run(serve(args) if args.mode == "server" else client(args))


if __name__ == "__main__":
    sys.exit(main())
