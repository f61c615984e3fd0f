#!/usr/bin/env bash
# The training run of scripts/build-release.sh: drives an instrumented moya-gateway over loopback with the traffic its
# hot path is optimized for, then stops it, so that it writes its execution profile.
#
#   scripts/pgo-train.sh GATEWAY_BINARY PROFILE_DIRECTORY
#
# One gateway (one event loop) serves, on a cleartext and a TLS listener, a stub route and a proxied route whose
# upstream is the gateway's own stub route over HTTP/1.1, so both the server and the client side run: proxied and stub
# GETs one at a time and 50 at once, proxied POSTs with a 1 KiB body, h2 and HTTP/1.1 over TLS, with the access log
# on (to a file). Then a second gateway starts on the shipped Configuration/ and answers a few of its routes (the code
# run at start-up). The profiles land in PROFILE_DIRECTORY as gateway-PID.profraw. Needs h2load (nghttp2-client),
# openssl and python3 (for free ports). Bounded: every load is h2load -n under a timeout, and the gateway is stopped by
# PID on exit.
set -euo pipefail
binary=$1
profiles=$2
# shellcheck source=scripts/pgo-lib.sh
source "$(dirname "$0")/pgo-lib.sh"
pgo_need "pgo-train (scripts/install-deps.sh --test)" h2load openssl python3
pgo_scratch moya-gateway-pgo
mkdir -p "$profiles"

read -r port tls_port admin_port < <(pgo_free_ports 3)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$run/key.pem" -out "$run/cert.pem" 2>/dev/null
head -c 1024 /dev/zero | tr '\0' 'x' >"$run/body"
json='{"id":12345,"name":"training","status":"ok","tags":["alpha","beta","gamma"],"owner":{"id":42,"login":"stub"},"created_at":"2024-01-01T00:00:00Z","description":"Fixed payload for the profile-guided build.","count":300,"ok":true}'
cat >"$run/gateway.yaml" <<YAML
server:
  listen: ["127.0.0.1:$port"]
  threads: 1
  tls: { listen: ["127.0.0.1:$tls_port"], certificate: "$run/cert.pem", private_key: "$run/key.pem" }
  buffering: { temp_dir: "$run" }
admin: { listen: "127.0.0.1:$admin_port" }
logging: { access_log: true, output: "$run/access.log" }
upstreams:
  itself: { base_url: "http://127.0.0.1:$port", pool: { max_connections: 64 } }
  canned: { stub: { status: 200, headers: { Content-Type: application/json }, body: '$json' } }
routes:
  - { name: proxied, match: { path_prefix: /api }, upstream: itself, rewrite: { strip_prefix: /api } }
  - { name: stub, match: { path_prefix: /json }, upstream: canned }
YAML
LLVM_PROFILE_FILE="$profiles/gateway-%p.profraw" "$binary" serve --config "$run/gateway.yaml" >"$run/gateway.out" 2>&1 &
gateway=$!
pgo_wait_port pgo-train "$port"

# load ARGS...: one bounded h2load run; fails the training when a request fails.
load() {
    local output
    output=$(timeout 120 h2load "$@" 2>&1) || { echo "pgo-train: h2load $* failed: $output" >&2; exit 1; }
    grep -qE 'requests: .* 0 failed, 0 errored' <<<"$output" \
        || { echo "pgo-train: h2load $* had failures: $(grep -E '^requests:' <<<"$output")" >&2; exit 1; }
}
plain="http://127.0.0.1:$port"
secure="https://127.0.0.1:$tls_port"
load --h1 -n 10000 -c 1 "$plain/api/json"
load --h1 -n 30000 -c 50 "$plain/api/json"
load --h1 -n 10000 -c 1 "$plain/json"
load --h1 -n 30000 -c 50 "$plain/json"
load --h1 -n 5000 -c 10 -d "$run/body" "$plain/api/json"
load -n 10000 -c 10 -m 10 "$secure/api/json"
load --h1 -n 5000 -c 20 "$secure/api/json"

pgo_stop pgo-train

# Start-up on the shipped configuration (stub upstreams only, two event loops) and a few of its answers: code run
# once is profiled too, so that the link lays it out on adjacent pages rather than among code that never runs (the
# idle memory is mostly the pages start-up touched: Benchmarks/README.md, session 55).
if [ -f Configuration/gateway.yaml ]; then
    pgo_shipped_config "$run/shipped" "$port" "$admin_port"
    LLVM_PROFILE_FILE="$profiles/gateway-%p.profraw" "$binary" serve --config "$run/shipped/gateway.yaml" \
        >"$run/gateway.out" 2>&1 &
    gateway=$!
    pgo_wait_port pgo-train "$admin_port"
    pgo_ask_shipped load "$run/shipped" "$port" "$admin_port"
    pgo_stop pgo-train
fi
ls "$profiles"/gateway-*.profraw >/dev/null
