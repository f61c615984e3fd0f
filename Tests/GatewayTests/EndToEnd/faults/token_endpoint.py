#!/usr/bin/env python3
"""An OAuth 2.0 token endpoint (client-credentials grant, client_secret_basic) and an API protected by its tokens, on
one loopback port, for the gateway's end-to-end tests of `access_token: { type: oauth2_client_credentials }`.

  POST /oauth/token   issues TOKEN_CANARY_<n> (n counts fetches) valid for --lifetime seconds, to a client that
                      authenticates with --client-id and one of the --client-secret values; answers 503 while the mode
                      is "fail" and a page that is not JSON while it is "garbage"
  GET  /api/...       200 to `Authorization: Bearer <a token issued, unexpired, not revoked>`, else 401
  GET  /stats         {"fetches", "api", "refused", "secret" (index of the secret last used), "inflight_max"}
  POST /control       JSON {"mode": "ok"|"fail"|"garbage", "lifetime": s, "delay": s} (any subset)
  POST /revoke        revokes every token issued so far

Loopback only; prints "ready" once listening.
"""
import argparse
import base64
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"fetches": 0, "api": 0, "refused": 0, "secret": -1, "issued": {}, "mode": "ok", "lifetime": 60.0,
         "delay": 0.0, "inflight": 0, "inflight_max": 0}
ARGS = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8", "replace") if length else ""

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        body = self.body()
        if path == "/oauth/token":
            return self.token(body)
        if path == "/control":
            with LOCK:
                for key, value in json.loads(body or "{}").items():
                    STATE[key] = value
            return self.answer(200, "{}")
        if path == "/revoke":
            with LOCK:
                STATE["issued"].clear()
            return self.answer(200, "{}")
        return self.answer(404, "{}")

    def token(self, body):
        form = dict(urllib.parse.parse_qsl(body))
        authorization = self.headers.get("Authorization", "")
        with LOCK:
            STATE["fetches"] += 1
            number = STATE["fetches"]
            mode, lifetime, delay = STATE["mode"], float(STATE["lifetime"]), float(STATE["delay"])
            STATE["inflight"] += 1
            STATE["inflight_max"] = max(STATE["inflight_max"], STATE["inflight"])
        try:
            if delay:
                time.sleep(delay)
            if mode == "fail":
                return self.answer(503, '{"error":"temporarily_unavailable"}')
            if mode == "garbage":
                return self.answer(200, "<html>not a token</html>", "text/html")
            secret = -1
            for index, candidate in enumerate(ARGS.client_secret):
                pair = urllib.parse.quote_plus(ARGS.client_id) + ":" + urllib.parse.quote_plus(candidate)
                if authorization == "Basic " + base64.b64encode(pair.encode()).decode():
                    secret = index
            if secret < 0 or form.get("grant_type") != "client_credentials" or form.get("scope") != ARGS.scope:
                return self.answer(401, '{"error":"invalid_client"}')
            token = "TOKEN_CANARY_%d" % number
            with LOCK:
                STATE["secret"] = secret
                STATE["issued"][token] = time.time() + lifetime
            return self.answer(200, json.dumps({"access_token": token, "token_type": "Bearer",
                                                "expires_in": lifetime}))
        finally:
            with LOCK:
                STATE["inflight"] -= 1

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/stats":
            with LOCK:
                stats = {key: STATE[key] for key in ("fetches", "api", "refused", "secret", "inflight_max")}
            return self.answer(200, json.dumps(stats))
        if path.startswith("/api"):
            authorization = self.headers.get("Authorization", "")
            token = authorization[7:] if authorization.startswith("Bearer ") else ""
            with LOCK:
                STATE["api"] += 1
                valid = STATE["issued"].get(token, 0) > time.time()
                if not valid:
                    STATE["refused"] += 1
            if not valid:
                return self.answer(401, '{"error":"invalid_token"}',
                                   headers=[("WWW-Authenticate", 'Bearer error="invalid_token"')])
            return self.answer(200, json.dumps({"ok": True, "path": path}))
        return self.answer(404, "{}")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog (set before `listen`, which the constructor calls): the default 5 drops the SYNs of a
    # burst of new connections, which then wait for the kernel's retransmission (1 s, 3 s, ...).
    request_queue_size = 512


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", action="append", required=True)
    parser.add_argument("--scope", default="")
    parser.add_argument("--lifetime", type=float, default=60.0)
    ARGS = parser.parse_args()
    STATE["lifetime"] = ARGS.lifetime
    server = Server(("127.0.0.1", ARGS.port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
