#!/usr/bin/env python3
"""Mutational fuzzer for the gateway's listeners: hostile HTTP/1.1, h2c and TLS byte streams.

Seeds are well-formed requests (HTTP/1.1 with bodies, chunking, pipelining, Expect and Upgrade; HTTP/2 sessions built
with python3-h2: several streams, bodies, resets, pings, window updates; a real TLS ClientHello). Each case mutates one
(bit flips, random bytes, cuts, splices, interesting numbers and tokens), sends it in random fragments over a new
connection (inside a real TLS session, or as raw bytes in place of the handshake, on the TLS port), maybe half-closes,
and reads the answer for a short while. After every case the gateway's process must still be alive: a trap is a denial
of service for every client.

Bounded: --cases in all (shared by --workers threads) and a --deadline in seconds, whichever comes first. Traffic only
to 127.0.0.1. Prints one JSON summary line: {"cases", "tls_cases", "answered", "alive", "crash_inputs",
"harness_errors", "seconds"}; on a crash the last input of every worker is written to --dir as crash-N.bin.
"""
import argparse, json, os, random, socket, ssl, sys, time

import h2.config
import h2.connection

from fuzzing import INTERESTING, BoundedRun, mutate

TOKENS = INTERESTING + [b"%", b"%00", b"%2f", b"%2e%2e", b".."]
PATHS = ["/up/json", "/stub", "/slow", "/shared/1", "/up/../stub", "/%2e%2e/x", "/up/a%2Fb", "/nowhere"]


def h1_seeds():
    seeds = []
    for path in (p.encode() for p in PATHS):
        seeds += [
            b"GET " + path + b" HTTP/1.1\r\nHost: a\r\nX-Request-Id: fuzz\r\nAccept-Encoding: gzip\r\n\r\n",
            b"POST " + path + b" HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
            b"POST " + path + b" HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n",
            b"GET " + path + b" HTTP/1.1\r\nHost: a\r\n\r\nGET /stub HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            b"PUT " + path + b" HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
            b"GET " + path + b" HTTP/1.0\r\n\r\n",
            b"GET " + path + b" HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            b"HEAD " + path + b" HTTP/1.1\r\nHost: a\r\nCookie: c=1\r\nAuthorization: Bearer t\r\n\r\n",
        ]
    return seeds


def h2_seed(rnd):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    conn.initiate_connection()
    stream = 1
    for _ in range(rnd.randint(1, 4)):
        method = rnd.choice(["GET", "POST", "HEAD"])
        end = method != "POST"
        conn.send_headers(stream, [(":method", method), (":path", rnd.choice(PATHS)), (":scheme", "http"),
                                   (":authority", "a"), ("accept-encoding", "gzip"),
                                   ("x-request-id", "q" * rnd.randint(1, 40))], end_stream=end)
        if not end:
            conn.send_data(stream, b"x" * rnd.randint(0, 3000), end_stream=rnd.random() < 0.8)
        if rnd.random() < 0.2:
            conn.reset_stream(stream)
        stream += 2
    if rnd.random() < 0.3:
        conn.ping(b"12345678")
    if rnd.random() < 0.2:
        # Up to the largest window h2 lets a peer open (2^31 - 1 in all, from the initial 65,535).
        conn.increment_flow_control_window(rnd.randint(1, 2 ** 31 - 1 - 65535))
    return conn.data_to_send()


def client_hello(context):
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE
        self.context.set_alpn_protocols(["h2", "http/1.1"])
        self.hello = client_hello(self.context)
        self.h1 = h1_seeds()
        self.bounds = BoundedRun(args.pid, args.cases, args.deadline, args.workers)
        self.cases = self.tls_cases = self.answered = 0
        self.last = {}

    def send(self, rnd, data, tls):
        sock = socket.create_connection(("127.0.0.1", self.args.tls_port if tls else self.args.port), timeout=2)
        if tls:
            if rnd.random() < 0.3:
                data = mutate(rnd, self.hello, TOKENS) + data
            else:
                try:
                    sock = self.context.wrap_socket(sock, server_hostname="localhost")
                except (OSError, ssl.SSLError):
                    sock.close()
                    return False
        sock.settimeout(0.1)
        answered = False
        try:
            position = 0
            while position < len(data):
                size = rnd.choice([len(data), 1, 7, 100, 4096])
                sock.sendall(data[position:position + size])
                position += size
            if rnd.random() < 0.5 and not tls:
                sock.shutdown(socket.SHUT_WR)
            started = time.monotonic()
            while time.monotonic() - started < 0.15:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answered = True
        except (OSError, ssl.SSLError):
            pass
        finally:
            sock.close()
        return answered

    def worker(self, index):
        rnd = random.Random(self.args.seed * 1000 + index)
        while self.bounds.take():
            tls = self.args.tls_port is not None and rnd.random() < self.args.tls_share
            data = mutate(rnd, rnd.choice(self.h1) if rnd.random() < 0.55 else h2_seed(rnd), TOKENS)
            self.last[index] = data
            try:
                answered = self.send(rnd, data, tls)
            except OSError:
                answered = False
                time.sleep(0.02)
            with self.bounds.lock:
                self.cases += 1
                self.tls_cases += tls
                self.answered += answered
            self.bounds.check()

    def run(self):
        seconds = self.bounds.run(self.worker)
        crash_inputs = []
        if self.bounds.dead:
            for index, data in self.last.items():
                path = os.path.join(self.args.dir, f"crash-{index}.bin")
                with open(path, "wb") as out:
                    out.write(data)
                crash_inputs.append(path)
        errors = self.bounds.harness_errors
        print(json.dumps({"cases": self.cases, "tls_cases": self.tls_cases, "answered": self.answered,
                          "alive": self.bounds.alive(), "crash_inputs": crash_inputs, "harness_errors": errors,
                          "seconds": seconds}))
        return 0 if not self.bounds.dead and not errors else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True, help="the cleartext listener (HTTP/1.1 and h2c)")
    parser.add_argument("--tls-port", type=int, help="a TLS listener (ALPN h2 and http/1.1)")
    parser.add_argument("--tls-share", type=float, default=0.3, help="the share of cases sent to the TLS listener")
    parser.add_argument("--pid", type=int, required=True, help="the gateway's process, checked after every case")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--deadline", type=float, default=60, help="seconds; the run stops then whatever is left")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", default=".", help="where crash inputs are written")
    sys.exit(Fuzzer(parser.parse_args()).run())


if __name__ == "__main__":
    main()
