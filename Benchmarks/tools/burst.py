#!/usr/bin/env python3
"""N identical GETs at the same moment over N connections opened beforehand (Benchmarks/coalesce.sh).

Opens every connection first, then writes every request in one turn of the event loop (`Connection: close`) and reads
each response to EOF. Wall time runs from the first request written to the last response complete. Prints one JSON
object: n, ok, errors, statuses, wall_ms, lat_min_ms, lat_p50_ms, lat_max_ms. Loopback only; bounded by --timeout.
"""
import argparse
import asyncio
import json
import statistics
import time


async def one(port, path, go, timeout):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await go.wait()
    started = time.perf_counter()
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: burst.py\r\n"
                 f"Connection: close\r\n\r\n".encode())
    await writer.drain()
    data = await asyncio.wait_for(reader.read(-1), timeout)
    ended = time.perf_counter()
    writer.close()
    status = data.split(b"\r\n", 1)[0].split(b" ")[1].decode() if data else "EOF"
    return status, started, ended


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    go = asyncio.Event()
    tasks = [asyncio.create_task(one(args.port, args.path, go, args.timeout)) for _ in range(args.n)]
    await asyncio.sleep(0.3)   # every connection is open by then
    go.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), args.timeout + 5)
    done = [r for r in results if not isinstance(r, BaseException)]
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    statuses = {}
    for status, _, _ in done:
        statuses[status] = statuses.get(status, 0) + 1
    latencies = sorted((end - start) * 1000 for _, start, end in done)
    out = {"n": args.n, "ok": len(done), "errors": len(failures), "statuses": statuses,
           "wall_ms": round((max(e for _, _, e in done) - min(s for _, s, _ in done)) * 1000, 1) if done else None,
           "lat_min_ms": round(latencies[0], 1) if latencies else None,
           "lat_p50_ms": round(statistics.median(latencies), 1) if latencies else None,
           "lat_max_ms": round(latencies[-1], 1) if latencies else None}
    if failures:
        out["first_error"] = failures[0]
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
