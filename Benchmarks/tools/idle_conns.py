#!/usr/bin/env python3
"""Opens N HTTP/1.1 keep-alive connections, makes one GET on each, then holds them idle (Benchmarks/run.sh's memory
measurement). Once every connection has had its answer it writes their count to --ready-file, holds them --hold
seconds, counts those the server closed meanwhile, prints one JSON line (opened, errors, statuses, open_seconds,
closed_by_server_during_hold) and exits. Loopback only.
"""
import argparse
import asyncio
import json
import os
import time


async def read_answer(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip().lower()
    if "content-length" in fields:
        await reader.readexactly(int(fields["content-length"]))
    elif fields.get("transfer-encoding") == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return lines[0].split(" ")[1]


async def open_one(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: idle_conns.py\r\n\r\n".encode())
    await writer.drain()
    return reader, writer, await asyncio.wait_for(read_answer(reader), 10)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/json")
    parser.add_argument("-n", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--hold", type=float, default=20.0)
    parser.add_argument("--ready-file", required=True)
    args = parser.parse_args()
    connections, statuses, errors = [], {}, 0
    started = time.perf_counter()
    for first in range(0, args.n, args.batch):
        batch = [open_one(args.port, args.path) for _ in range(min(args.batch, args.n - first))]
        for result in await asyncio.gather(*batch, return_exceptions=True):
            if isinstance(result, BaseException):
                errors += 1
            else:
                connections.append(result)
                statuses[result[2]] = statuses.get(result[2], 0) + 1
    open_seconds = time.perf_counter() - started
    with open(args.ready_file + ".tmp", "w") as f:
        f.write(str(len(connections)))
    os.replace(args.ready_file + ".tmp", args.ready_file)
    await asyncio.sleep(args.hold)
    closed = 0
    for reader, writer, _ in connections:
        try:   # a close by the server is an EOF already waiting
            if await asyncio.wait_for(reader.read(1), 0.001) == b"":
                closed += 1
        except asyncio.TimeoutError:
            pass
        writer.close()
    print(json.dumps({"opened": len(connections), "errors": errors, "statuses": statuses,
                      "open_seconds": round(open_seconds, 2), "closed_by_server_during_hold": closed}))


if __name__ == "__main__":
    asyncio.run(main())
