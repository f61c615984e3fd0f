#!/usr/bin/env python3
"""WebSocket load for Benchmarks/websocket.sh, on Python's `websockets` (no compression negotiated).

upstream --port P   /echo echoes every message; /sink counts the bytes of binary messages and, on the text message
                    "done", answers their total
rtt --url U         N sequential round trips of a SIZE-byte binary message on /echo; prints JSON with the median and
                    p99 round trip in microseconds
stream --url U      MB MiB of CHUNK-byte binary messages to /sink as fast as the tunnel takes them, then "done";
                    prints JSON with MiB/s (checked against the sink's count)
hold --url U        opens N connections to /echo (one round trip each), prints "open" once all are, keeps them for
                    SECONDS, then closes them; prints JSON with how many were open
Every wait is bounded.
"""
import argparse
import asyncio
import json
import statistics
import time

import websockets


async def upstream(args):
    async def handler(ws, path):
        try:
            if path.startswith("/sink"):
                total = 0
                async for message in ws:
                    if isinstance(message, str) and message == "done":
                        await ws.send(str(total))
                        total = 0
                    else:
                        total += len(message)
            else:
                async for message in ws:
                    await ws.send(message)
        except websockets.ConnectionClosed:
            pass

    async with websockets.serve(handler, "127.0.0.1", args.port, max_size=None, ping_interval=None, compression=None):
        await asyncio.sleep(args.lifetime)


async def rtt(args):
    async with websockets.connect(args.url, max_size=None, ping_interval=None, compression=None, open_timeout=10) as ws:
        payload = bytes(args.size)
        for _ in range(args.warmup):
            await ws.send(payload)
            await asyncio.wait_for(ws.recv(), 10)
        samples = []
        for _ in range(args.n):
            start = time.perf_counter_ns()
            await ws.send(payload)
            await asyncio.wait_for(ws.recv(), 10)
            samples.append((time.perf_counter_ns() - start) / 1000)
        samples.sort()
        print(json.dumps({"n": args.n, "median_us": statistics.median(samples),
                          "p99_us": samples[int(len(samples) * 0.99) - 1]}))


async def stream(args):
    async with websockets.connect(args.url, max_size=None, ping_interval=None, compression=None, open_timeout=10,
                                  write_limit=1 << 20) as ws:
        chunk = bytes(args.chunk)
        count = (args.mb << 20) // args.chunk
        start = time.perf_counter()
        for _ in range(count):
            await ws.send(chunk)
        await ws.send("done")
        total = int(await asyncio.wait_for(ws.recv(), 120))
        seconds = time.perf_counter() - start
        if total != count * args.chunk:
            raise SystemExit(f"the sink counted {total} bytes of {count * args.chunk}")
        print(json.dumps({"mib": args.mb, "seconds": seconds, "mib_s": args.mb / seconds}))


async def hold(args):
    connections = []
    try:
        for _ in range(args.n):
            ws = await websockets.connect(args.url, max_size=None, ping_interval=None, compression=None, open_timeout=10)
            await ws.send(b"x")
            await asyncio.wait_for(ws.recv(), 10)
            connections.append(ws)
        print("open", flush=True)
        await asyncio.sleep(args.seconds)
    finally:
        for ws in connections:
            await ws.close()
    print(json.dumps({"held": len(connections)}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    u = sub.add_parser("upstream")
    u.add_argument("--port", type=int, required=True)
    u.add_argument("--lifetime", type=float, default=3600)
    r = sub.add_parser("rtt")
    r.add_argument("--url", required=True)
    r.add_argument("--n", type=int, default=5000)
    r.add_argument("--warmup", type=int, default=200)
    r.add_argument("--size", type=int, default=1024)
    s = sub.add_parser("stream")
    s.add_argument("--url", required=True)
    s.add_argument("--mb", type=int, default=256)
    s.add_argument("--chunk", type=int, default=65536)
    h = sub.add_parser("hold")
    h.add_argument("--url", required=True)
    h.add_argument("--n", type=int, default=1000)
    h.add_argument("--seconds", type=float, default=6)
    args = parser.parse_args()
    asyncio.run({"upstream": upstream, "rtt": rtt, "stream": stream, "hold": hold}[args.mode](args))


if __name__ == "__main__":
    main()
