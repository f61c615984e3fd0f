#!/usr/bin/env python3
"""The benchmarks' slow upstream (asyncio, standard library only), behind the nginx upstream's /slow, /hits, /reset.

  GET /slow...   waits --delay seconds, counts the hit, answers a small JSON body marked cacheable
  GET /hits      {"hits": N, "peak_inflight": M}    (not counted)
  GET /reset     zeroes both counters                (not counted)

HTTP/1.1 keep-alive unless the request says `Connection: close`. Listens on 127.0.0.1 only; stops on SIGTERM/SIGINT.
Benchmarks/coalesce.sh counts with it how many of N identical concurrent requests reached the upstream.
"""
import argparse
import asyncio
import json
import signal

counters = {"hits": 0, "inflight": 0, "peak_inflight": 0}


def answer(status, body, extra=(), close=False):
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Content-Length: {len(body)}", *extra,
            "Connection: close" if close else "Connection: keep-alive"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def serve(reader, writer, delay):
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                writer.write(answer("400 Bad Request", b"{}", close=True))
                await writer.drain()
                return
            method, target, version = parts
            fields = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    fields[name.strip().lower()] = value.strip().lower()
            if int(fields.get("content-length") or 0):
                await reader.readexactly(int(fields["content-length"]))
            connection = fields.get("connection", "")
            close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
            path = target.split("?", 1)[0]
            if path.startswith("/slow"):
                counters["hits"] += 1
                hit = counters["hits"]
                counters["inflight"] += 1
                counters["peak_inflight"] = max(counters["peak_inflight"], counters["inflight"])
                try:
                    await asyncio.sleep(delay)
                finally:
                    counters["inflight"] -= 1
                body = json.dumps({"slow": True, "delay_ms": round(delay * 1000), "hit": hit}).encode()
                out = answer("200 OK", body, ["Cache-Control: public, max-age=60"], close)
            elif path == "/hits":
                body = json.dumps({"hits": counters["hits"], "peak_inflight": counters["peak_inflight"]}).encode()
                out = answer("200 OK", body, ["Cache-Control: no-store"], close)
            elif path == "/reset":
                counters["hits"] = counters["peak_inflight"] = 0
                out = answer("200 OK", b'{"reset":true}', ["Cache-Control: no-store"], close)
            else:
                out = answer("404 Not Found", b'{"error":"not found"}', ["Cache-Control: no-store"], close)
            if method == "HEAD":
                out = out.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
            writer.write(out)
            await writer.drain()
            if close:
                return
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=18081)
    parser.add_argument("--delay", type=float, default=0.1)
    args = parser.parse_args()
    server = await asyncio.start_server(lambda r, w: serve(r, w, args.delay), "127.0.0.1", args.port, backlog=4096,
                                        reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
