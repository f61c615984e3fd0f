#!/usr/bin/env bash
# moya-gateway against nginx over TLS, HTTP/2 and HTTP/1.1, both proxying the same nginx upstream (`return 200` with a
# 300-byte JSON body, conf/nginx-upstream.conf on :18080), in the same run, same pinning:
#
#   h2load -n $NREQ -c10 -m10             https://127.0.0.1:PORT/json   (ALPN h2)
#   h2load -n $NREQ -c100 -m1 --h1        https://127.0.0.1:PORT/json   (HTTP/1.1, 100 connections, no pipelining)
#   targets: gw        moya-gateway, TLS listener, http2 on, upstream pool of $GW_POOL connections
#            gwe       the same with `server.io_uring: false` (what a container under the default seccomp profile
#                      gets), on $GW_TLS_PORT + 10; EPOLL=0 leaves it out
#            nginx-ka64 / nginx-ka256   nginx `listen ssl http2`, `proxy_pass` with `keepalive 64` / `256`
#                                       (conf/nginx-tls.conf; h2 on :18443, HTTP/1.1 on :18444)
#
# NREQ stays at or below 1000 requests per connection (10,000 over -c10): the server closes an HTTP/2 connection with
# GOAWAY after 1000 requests (HTTP2Settings.maxRequestsPerConnection, nginx's keepalive_requests default too), and
# h2load does not reconnect, so larger runs would count the rest as failed.
#
# Servers on CPU $SERVER_CPU, h2load on CPU $CLIENT_CPU (PIN=1); REPS interleaved repetitions after a discarded warm-up;
# medians. CPU µs per request of the proxy's process tree (gateway or nginx TLS) and of the upstream, from
# /proc/PID/stat ticks before/after each run. ALONE=1 moves the upstream to CPU $CLIENT_CPU beside h2load, so that
# each proxy has CPU $SERVER_CPU to itself: with the upstream beside it, /proc/PID/stat bills part of the gateway's
# time to the upstream (Benchmarks/README.md, session 20), so use ALONE=1 for CPU per request. TLS: self-signed ECDSA
# P-256 certificate made with the openssl CLI in the run directory; the gateway config is generated there too. All
# traffic on 127.0.0.1; every process is started with common.sh's spawn and stopped by PID on EXIT; every h2load run is
# bounded (-n, `timeout -k 5 $CLIENT_TIMEOUT`).
#
# Env: REPS=3 ALONE=0 NREQ=10000 CASES="h2-c10-m10 h1-c100-m1" KEEPALIVES="64 256" GW_POOL=64 EPOLL=1 SKIP_BUILD=0
#      RUN_DIR=/tmp/moyabench-h2 GW_TLS_PORT=18453 QUIET_PCT=5 QUIET_MAX_WAIT=30 GUARD_RETRIES=1
# Output: progress on stderr, a markdown table on stdout (also $RUN_DIR/results/h2/summary.md); raw h2load output
# and .cpu sidecars under $RUN_DIR/results/h2/.
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench-h2}"
export QUIET_MAX_WAIT="${QUIET_MAX_WAIT:-30}"
export GUARD_RETRIES="${GUARD_RETRIES:-1}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
NREQ="${NREQ:-10000}"
CASES="${CASES:-h2-c10-m10 h1-c100-m1}"
KEEPALIVES="${KEEPALIVES:-64 256}"
GW_POOL="${GW_POOL:-64}"
GW_TLS_PORT="${GW_TLS_PORT:-18453}"
GW_ADMIN_PORT="${GW_ADMIN_PORT:-18454}"
EPOLL="${EPOLL:-1}"
GWE_TLS_PORT=$((GW_TLS_PORT + 10))
GWE_ADMIN_PORT=$((GW_ADMIN_PORT + 10))
OUT="$RESULTS_DIR/h2"

need h2load nginx openssl curl taskset swift "$PY"
build_gateway

install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT"
record_env "$OUT"
{
    build_conditions
    echo "load: h2load -n $NREQ; cases: $CASES; nginx upstream keepalive: $KEEPALIVES; gateway pool: $GW_POOL; reps=$REPS"
    echo "tls: self-signed ECDSA P-256 (openssl CLI)"
} >>"$OUT/conditions.txt"

# TLS certificate and gateway config, generated into the run directory.
mkdir -p "$RUN_DIR/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$RUN_DIR/tls/key.pem" -out "$RUN_DIR/tls/cert.pem" 2>/dev/null
write_config() {   # write_config FILE TLS_PORT ADMIN_PORT IO_URING
    cat >"$1" <<YAML
server:
  listen: ["127.0.0.1:$(($2 + 2))"]
  threads: 1
  http2: true
  io_uring: $4
  tls: { listen: ["127.0.0.1:$2"], certificate: "$RUN_DIR/tls/cert.pem", private_key: "$RUN_DIR/tls/key.pem" }
admin: { listen: "127.0.0.1:$3" }
logging: { access_log: false }
upstreams:
  bench: { base_url: "http://127.0.0.1:$UP_PORT", pool: { max_connections: $GW_POOL } }
routes:
  - { name: json, match: { path: /json }, upstream: bench }
YAML
    "$GW_BIN" check --config "$1" >&2 || die "generated gateway config $1 is invalid"
}
write_config "$RUN_DIR/gateway-h2.yaml" "$GW_TLS_PORT" "$GW_ADMIN_PORT" true
write_config "$RUN_DIR/gateway-epoll-h2.yaml" "$GWE_TLS_PORT" "$GWE_ADMIN_PORT" false

require_free_ports "$UP_PORT" "$TLS_H2_PORT" "$TLS_H1_PORT" "$GW_TLS_PORT" "$((GW_TLS_PORT + 2))" "$GW_ADMIN_PORT" \
    "$GWE_TLS_PORT" "$((GWE_TLS_PORT + 2))" "$GWE_ADMIN_PORT"
if [[ "${ALONE:-0}" == 1 ]]; then
    PROXY_PINNING=("${SRV[@]}")
    SRV=("${CLI[@]}")
    start_nginx upstream nginx-upstream.conf "http://$HOST:$UP_PORT/json"
    SRV=("${PROXY_PINNING[@]}")
else
    start_nginx upstream nginx-upstream.conf "http://$HOST:$UP_PORT/json"
fi
UP_PID=$(pid_of upstream)
spawn gateway "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/gateway-h2.yaml"
wait_http "http://$HOST:$GW_ADMIN_PORT/readyz"
GW_PID=$(pid_of gateway)
[[ "$(curl -ks --http2 -o /dev/null -w '%{http_version}' "https://$HOST:$GW_TLS_PORT/json")" == 2 ]] ||
    die "the gateway does not answer h2 on :$GW_TLS_PORT"
if [[ "$EPOLL" == 1 ]]; then
    spawn gateway-epoll "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/gateway-epoll-h2.yaml"
    wait_http "http://$HOST:$GWE_ADMIN_PORT/readyz"
    GWE_PID=$(pid_of gateway-epoll)
fi

case_args() {   # case_args CASE -> h2load arguments (without URL)
    case $1 in
        h2-c10-m10) echo "-c 10 -m 10" ;;
        h1-c100-m1) echo "--h1 -c 100 -m 1" ;;
        h1-c10-m10pipe) echo "--h1 -c 10 -m 10" ;;
        *) die "unknown case $1" ;;
    esac
}
# target -> URL base per case (nginx: h2 on :18443, HTTP/1.1 only on :18444)
target_url() {   # target_url TARGET CASE
    if [[ $1 == gwe* ]]; then echo "https://$HOST:$GWE_TLS_PORT/json"
    elif [[ $1 == gw* ]]; then echo "https://$HOST:$GW_TLS_PORT/json"
    elif [[ $2 == h2-* ]]; then echo "https://$HOST:$TLS_H2_PORT/json"
    else echo "https://$HOST:$TLS_H1_PORT/json"; fi
}

measure() {   # measure TARGET PROXY_PID CASE REP
    local target=$1 pid=$2 c=$3 rep=$4 f attempt p0 p1 u0 u1 s0 s1
    f="$OUT/${target}_${c}_r${rep}.txt"
    for attempt in $(seq $((GUARD_RETRIES + 1))); do
        guard_begin
        p0=$(cpu_ticks "$pid"); u0=$(cpu_ticks "$UP_PID"); s0=$(percpu_snap)
        # shellcheck disable=SC2046
        client h2load -n "$NREQ" $(case_args "$c") "$(target_url "$target" "$c")" >"$f"
        s1=$(percpu_snap); p1=$(cpu_ticks "$pid"); u1=$(cpu_ticks "$UP_PID")
        guard_end && break
        log "rep $rep $target $c: other processes took ${FOREIGN_PCT}% of a CPU (try $attempt)"
    done
    echo "clk_tck=$CLK_TCK proxy_ticks=$((p1 - p0)) upstream_ticks=$((u1 - u0))" \
        "$(percpu_busy "$s0" "$s1") foreign_pct=$FOREIGN_PCT" >"${f%.txt}.cpu"
    log "rep $rep $target $c: $("$PY" "$TOOLS/benchlib.py" h2load "$f") proxy_ticks=$((p1 - p0))"
}

# One nginx at a time (they share :18443/:18444); the gateway runs throughout and is measured beside each.
for ka in $KEEPALIVES; do
    UPSTREAM_KEEPALIVE=$ka start_nginx "nginx-ka$ka" nginx-tls.conf "https://$HOST:$TLS_H2_PORT/local"
    np=$(pid_of "nginx-ka$ka")
    for c in $CASES; do   # warm-up, discarded
        # shellcheck disable=SC2046
        client h2load -n 2000 $(case_args "$c") "$(target_url nginx "$c")" >/dev/null
        # shellcheck disable=SC2046
        client h2load -n 2000 $(case_args "$c") "$(target_url gw "$c")" >/dev/null
        # shellcheck disable=SC2046
        [[ "$EPOLL" != 1 ]] || client h2load -n 2000 $(case_args "$c") "$(target_url gwe "$c")" >/dev/null
    done
    for rep in $(seq "$REPS"); do
        for c in $CASES; do
            measure "nginx-ka$ka" "$np" "$c" "$rep"
            measure "gw-vs-ka$ka" "$GW_PID" "$c" "$rep"
            [[ "$EPOLL" != 1 ]] || measure "gwe-vs-ka$ka" "$GWE_PID" "$c" "$rep"
        done
    done
    stop_one "nginx-ka$ka"
done
echo "loadavg_at_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/conditions.txt"
stop_all

# Table: medians per (phase, target, case); ratios gateway/nginx within each phase. RATIO lines are for table.sh.
"$PY" - "$OUT" "$TOOLS" "$CASES" "$KEEPALIVES" <<'PY' | tee "$OUT/summary.md"
import glob, os, statistics, sys
out, tools, cases, keepalives = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
sys.path.insert(0, tools)
import benchlib

def runs(target, case):
    rows = []
    for f in sorted(glob.glob(f"{out}/{target}_{case}_r*.txt")):
        h = benchlib.parse_h2load(f)
        cpu = benchlib.parse_cpu(f[:-4] + ".cpu", h["succeeded"])
        rows.append((h, cpu))
    return rows

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"

print("| case | target | req/s median (min-max) | proxy CPU µs/req | upstream CPU µs/req | failed | protocol |")
print("|---|---|---|---|---|---|---|")
ratios = []
for case in cases:
    for ka in keepalives:
        stats = {}
        for target in (f"nginx-ka{ka}", f"gw-vs-ka{ka}", f"gwe-vs-ka{ka}"):
            rows = runs(target, case)
            if not rows:
                continue
            rps = [h["rps"] for h, _ in rows if h["rps"]]
            stats[target] = (med(rps), med([c["proxy_cpu_us"] for _, c in rows]))
            label = ("moya-gateway, io_uring: false" if target.startswith("gwe") else
                     "moya-gateway" if target.startswith("gw") else f"nginx keepalive {ka}")
            print(f"| {case} | {label} (phase ka{ka}) | {fmt(med(rps))} ({fmt(min(rps) if rps else None)}-{fmt(max(rps) if rps else None)}) "
                  f"| {fmt(stats[target][1], 1)} | {fmt(med([c['upstream_cpu_us'] for _, c in rows]), 1)} "
                  f"| {sum(h['failed'] or 0 for h, _ in rows)} | {rows[0][0]['proto'] or '-'} |")
        n = stats.get(f"nginx-ka{ka}")
        for suffix, ours in (("", f"gw-vs-ka{ka}"), ("-epoll", f"gwe-vs-ka{ka}")):
            g = stats.get(ours)
            if n and g and n[0] and g[0] and n[1] and g[1]:
                ratios.append((case + suffix, ka, g[0] / n[0], g[1] / n[1], g, n))
print()
print("| case | vs nginx keepalive | req/s ratio (gateway/nginx) | CPU µs/req ratio (gateway/nginx) |")
print("|---|---|---|---|")
for case, ka, r, c, _, _ in ratios:
    print(f"| {case} | {ka} | {r:.2f} | {c:.2f} |")
print()
for case, ka, r, c, g, n in ratios:
    print(f"RATIO h2.{case}.ka{ka} rps={r:.3f} cpu={c:.3f} ours_rps={g[0]:.0f} ours_cpu={g[1]:.1f} "
          f"ref_rps={n[0]:.0f} ref_cpu={n[1]:.1f}")
PY
