#!/usr/bin/env bash
# Where a proxied request's CPU goes, layer by layer: user and system CPU per request of three proxies in front of the
# benchmarks' nginx upstream (GET /json, 300-byte JSON), each measured under the same wrk load, interleaved, REPS times:
#   nginx     nginx `proxy_pass` with upstream keep-alive 64 (conf/nginx-proxy.conf)
#   engine    `hello-server --proxy`: our HTTP server and HTTPClient alone (no routing, Moya, plugins or logs)
#   gateway   `moya-gateway` with one proxied route (threads 1, access log off, pool 64)
#   gateway-epoll  the same gateway with `server.io_uring: false` (what a container under the default seccomp profile
#             gets: each connection's writes one `sendmsg` each instead of a round's in one `io_uring_enter`)
# engine − nginx is the engine's gap; gateway − engine is what Moya and the gateway add on top of it.
# Servers (upstream included) on CPU 1, wrk -t1 -c$CONNS on CPU 0; CPU from /proc/PID/stat of each process tree, and
# CPU 1's busy time per request from /proc/stat.
# ALONE=1 moves the nginx upstream to CPU 0 beside wrk, so that each proxy has CPU 1 to itself and CPU 1's busy time
# per request is that proxy's whole cost, whoever the kernel bills it to. Use it for CPU per request: with the
# upstream on the same CPU, /proc/PID/stat bills part of moya-gateway's time to the upstream (Benchmarks/README.md,
# session 20).
#
# Env: REPS=3 DURATION=5 CONNS=50 ALONE=0 SKIP_BUILD=0 RUN_DIR=/tmp/moyabench-layers
#      BIN_DIR= (a directory holding the moya-gateway and hello-server to measure, e.g. a saved build for an A/B;
#      nothing is built then) GW_BIN= (the moya-gateway to measure; default: BIN_DIR's, else the build deploy/ ships,
#      scripts/build-release.sh --static-swift-stdlib, profile-guided; hello-server is a plain release build)
# Bounded: every wrk run has -d and runs under common.sh's timeout; every process is stopped by PID on exit.
set -euo pipefail
export RUN_DIR="${RUN_DIR:-/tmp/moyabench-layers}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-5}"
CONNS="${CONNS:-50}"
ALONE="${ALONE:-0}"
ENGINE_PORT=18210
GATEWAY_PORT=18212
GATEWAY_ADMIN=18213
EPOLL_PORT=18214
EPOLL_ADMIN=18215
install_traps
kill_stale
require_free_ports "$UP_PORT" "$SLOW_PORT" "$NGX_PORT" "$ENGINE_PORT" "$GATEWAY_PORT" "$GATEWAY_ADMIN" "$EPOLL_PORT" \
    "$EPOLL_ADMIN"
if [[ -n "${BIN_DIR:-}" ]]; then
    BIN="$BIN_DIR"
    GW_BIN="${GW_BIN:-$BIN/moya-gateway}"
else
    [[ "${SKIP_BUILD:-0}" == 1 ]] || (cd "$ROOT" && swift build -c release --product hello-server >&2)
    BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)"
    build_gateway
fi
[[ -x "$GW_BIN" && -x "$BIN/hello-server" ]] || die "missing $GW_BIN or hello-server in $BIN"

mkdir -p "$RUN_DIR"
write_config() {   # write_config FILE PORT ADMIN IO_URING
    cat >"$1" <<YAML
server: { listen: ["$HOST:$2"], threads: 1, http2: false, io_uring: $4 }
admin: { listen: "$HOST:$3" }
logging: { access_log: false }
upstreams:
  bench: { base_url: "http://$HOST:$UP_PORT", pool: { max_connections: 64 } }
routes:
  - { name: json, match: { path: /json }, upstream: bench }
YAML
}
write_config "$RUN_DIR/gateway.yaml" "$GATEWAY_PORT" "$GATEWAY_ADMIN" true
write_config "$RUN_DIR/gateway-epoll.yaml" "$EPOLL_PORT" "$EPOLL_ADMIN" false

if [[ "$ALONE" == 1 ]]; then
    PROXY_PINNING=("${SRV[@]}")
    SRV=("${CLI[@]}")
    start_upstream
    SRV=("${PROXY_PINNING[@]}")
else
    start_upstream
fi
start_nginx_proxy
spawn engine "${SRV[@]}" "$BIN/hello-server" --port "$ENGINE_PORT" --proxy "http://$HOST:$UP_PORT"
wait_http "http://$HOST:$ENGINE_PORT/json"
spawn gateway "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/gateway.yaml"
wait_http "http://$HOST:$GATEWAY_ADMIN/readyz"
spawn gateway-epoll "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/gateway-epoll.yaml"
wait_http "http://$HOST:$EPOLL_ADMIN/readyz"

declare -A PORT=([nginx]=$NGX_PORT [engine]=$ENGINE_PORT [gateway]=$GATEWAY_PORT [gateway-epoll]=$EPOLL_PORT)
TARGETS=(nginx engine gateway gateway-epoll)

# User and system clock ticks of a process and its descendants (nginx's worker is its master's child).
ticks() {
    local pid total_user=0 total_system=0 user system
    for pid in "$1" $(_descendants "$1" | cut -d: -f1); do
        read -r user system < <(_stat "$pid" | awk '{print $12, $13}') || continue
        total_user=$((total_user + user)); total_system=$((total_system + system))
    done
    echo "$total_user $total_system"
}

# Busy clock ticks of the servers' CPU: user, nice, system, irq, softirq and steal from /proc/stat.
cpu_busy() {
    awk -v cpu="cpu$SERVER_CPU" '$1 == cpu { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

HZ=$(getconf CLK_TCK)
OUT="$RUN_DIR/results.txt"
: >"$OUT"
for target in "${TARGETS[@]}"; do   # warm-up: pools filled, caches hot
    client wrk -t1 -c"$CONNS" -d1s "http://$HOST:${PORT[$target]}/json" >/dev/null
done
for rep in $(seq 1 "$REPS"); do
    for target in "${TARGETS[@]}"; do
        pid=$(pid_of "$target")
        read -r user0 system0 < <(ticks "$pid")
        busy0=$(cpu_busy)
        client wrk -t1 -c"$CONNS" -d"${DURATION}s" "http://$HOST:${PORT[$target]}/json" >"$RUN_DIR/wrk.txt"
        busy1=$(cpu_busy)
        read -r user1 system1 < <(ticks "$pid")
        requests=$(awk '/requests in/ {print $1}' "$RUN_DIR/wrk.txt")
        rate=$(awk '/Requests\/sec/ {print $2}' "$RUN_DIR/wrk.txt")
        errors=$(awk '/Non-2xx|Socket errors/' "$RUN_DIR/wrk.txt")
        [[ -z "$errors" ]] || log "$target rep $rep: $errors"
        awk -v t="$target" -v r="$requests" -v rate="$rate" -v u=$((user1 - user0)) -v s=$((system1 - system0)) \
            -v b=$((busy1 - busy0)) -v hz="$HZ" \
            'BEGIN { printf "%s %s %.2f %.2f %.2f\n", t, rate, u * 1e6 / hz / r, s * 1e6 / hz / r, b * 1e6 / hz / r }' \
            >>"$OUT"
        log "rep $rep $(tail -n 1 "$OUT")"
    done
done

"$PY" - "$OUT" "$ALONE" "$SERVER_CPU" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    target, *values = line.split()
    rows.setdefault(target, []).append(tuple(map(float, values)))
def median(target, column):
    return statistics.median(row[column] for row in rows[target])
def spread(target, column):
    values = [row[column] for row in rows[target]]
    return f"{min(values):.1f}–{max(values):.1f}" if column else f"{min(values):,.0f}–{max(values):,.0f}"
alone = sys.argv[2] == "1"
busy = f"CPU {sys.argv[3]} busy µs/req" + (" (the proxy alone)" if alone else " (proxy and upstream)")
print(f"| proxy | req/s (median, min–max) | user µs/req | system µs/req | user vs nginx | {busy} | busy vs nginx |")
print("|---|---:|---:|---:|---:|---:|---:|")
for target in ("nginx", "engine", "gateway", "gateway-epoll"):
    print(f"| {target} | {median(target, 0):,.0f} ({spread(target, 0)}) | {median(target, 1):.1f} ({spread(target, 1)}) "
          f"| {median(target, 2):.1f} ({spread(target, 2)}) | {median(target, 1) / median('nginx', 1):.1f}× "
          f"| {median(target, 3):.1f} ({spread(target, 3)}) | {median(target, 3) / median('nginx', 3):.2f}× |")
print()
print(f"engine − nginx: {median('engine', 1) - median('nginx', 1):.1f} µs user; "
      f"gateway − engine (Moya and the gateway): {median('gateway', 1) - median('engine', 1):.1f} µs user")
if alone:
    print(f"CPU {sys.argv[3]} busy: engine − nginx {median('engine', 3) - median('nginx', 3):.1f} µs; "
          f"gateway − engine {median('gateway', 3) - median('engine', 3):.1f} µs")
PY
