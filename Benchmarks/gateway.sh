#!/usr/bin/env bash
# moya-gateway against the proxies a user would otherwise pick, all in front of the same upstream, in the same run:
#
#   wrk -t1 -c$CONNS -d$DURATION --latency   GET /json (the upstream's 300-byte JSON body), for CONNS in 50 and 1
#   targets   direct         the upstream itself (nginx `return 200`, conf/nginx-upstream.conf on :18080)
#             nginx          nginx `proxy_pass`, upstream keep-alive 64 (conf/nginx-proxy.conf)
#             nginx-twin     the same nginx again on its own port, measured later in each repetition: nginx-twin
#                            against nginx is an A/A pair, what the harness reads between two equal proxies
#             haproxy        HAProxy, one thread, `http-reuse always` (conf/haproxy.cfg)
#             caddy          Caddy `reverse_proxy`, GOMAXPROCS=1, 64 idle upstream connections (conf/caddy-proxy.Caddyfile)
#             gw-proxy       moya-gateway proxying /json to the upstream (threads 1, pool of 64)
#             gw-stub        moya-gateway answering /json from a stub upstream with a 300-byte body
#             gw-proxy-epoll, gw-stub-epoll  the same with `server.io_uring: false` (what a container under the
#                            default seccomp profile gets: one `sendmsg` per connection's writes)
#             caddy-respond  Caddy `respond` with the same body (conf/caddy-respond.Caddyfile)
#             varnish        Varnish pass-through (conf/varnish-pass.vcl): not in the default TARGETS
#
# The proxies compare with each other and with `direct`; gw-stub compares with nginx `return 200` (direct) and Caddy
# `respond`. Every server runs pinned to CPU $SERVER_CPU (the upstream included) with one worker or thread and no
# access log (ACCESS_LOG=true turns the gateway's on), wrk on CPU $CLIENT_CPU; REPS interleaved repetitions after a
# 1 s warm-up each; medians. Besides req/s and latency, each run records the CPU ticks of the target's process tree
# and of the upstream (per request in the table) and how busy each CPU was. With the upstream beside it on CPU 1,
# /proc bills part of a proxy's work to the upstream (Benchmarks/README.md, session 20): for CPU per proxied request
# use layers.sh ALONE=1.
#
# Env: REPS=3 DURATION=5s CONNS="50 1"
#      TARGETS="direct nginx haproxy caddy gw-proxy gw-proxy-epoll nginx-twin gw-stub gw-stub-epoll caddy-respond"
#      ACCESS_LOG=false SKIP_BUILD=0 PIN=1 RUN_DIR=/tmp/moyabench-proxy QUIET_PCT=5 QUIET_MAX_WAIT=30 GUARD_RETRIES=1
# Output: progress on stderr, a markdown table on stdout; raw wrk output, .cpu sidecars and summary.tsv under
# $RUN_DIR/results/throughput/.
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench-proxy}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-5s}"
CONNS="${CONNS:-50 1}"
TARGETS="${TARGETS:-direct nginx haproxy caddy gw-proxy gw-proxy-epoll nginx-twin gw-stub gw-stub-epoll caddy-respond}"
GW_PROXY_PORT=18200 GW_PROXY_ADMIN=18201 GW_STUB_PORT=18202 GW_STUB_ADMIN=18203
GW_PROXY_EPOLL_PORT=18204 GW_PROXY_EPOLL_ADMIN=18205 GW_STUB_EPOLL_PORT=18206 GW_STUB_EPOLL_ADMIN=18207
OUT="$RESULTS_DIR/throughput"
MODE=$([[ "$PIN" == 1 ]] && echo pinned || echo unpinned)

declare -A PORT=([direct]=$UP_PORT [nginx]=$NGX_PORT [nginx-twin]=$NGX_TWIN_PORT [haproxy]=$HAP_PORT
    [caddy]=$CADDY_PORT [varnish]=$VAR_PORT [gw-proxy]=$GW_PROXY_PORT [gw-stub]=$GW_STUB_PORT [gw-proxy-epoll]=$GW_PROXY_EPOLL_PORT
    [gw-stub-epoll]=$GW_STUB_EPOLL_PORT [caddy-respond]=$CADDY_RESPOND_PORT)
declare -A ADMIN=([gw-proxy]=$GW_PROXY_ADMIN [gw-stub]=$GW_STUB_ADMIN [gw-proxy-epoll]=$GW_PROXY_EPOLL_ADMIN
    [gw-stub-epoll]=$GW_STUB_EPOLL_ADMIN)
for t in $TARGETS; do [[ -n "${PORT[$t]:-}" ]] || die "unknown target $t"; done
has() { [[ " $TARGETS " == *" $1 "* ]]; }

need wrk nginx curl taskset ss swift "$PY"
has haproxy && need haproxy
has varnish && need varnishd
if has caddy || has caddy-respond; then need caddy; fi
build_gateway

install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT"
record_env "$OUT"
{
    build_conditions
    echo "load: wrk -t1 -c{$CONNS} -d$DURATION --latency GET /json; targets: $TARGETS; reps=$REPS; mode=$MODE"
} >>"$OUT/conditions.txt"

write_config() {   # write_config FILE PORT ADMIN UPSTREAM IO_URING
    cat >"$1" <<YAML
server: { listen: ["$HOST:$2"], threads: 1, http2: false, io_uring: $5 }
admin: { listen: "$HOST:$3" }
logging: { access_log: ${ACCESS_LOG:-false} }
upstreams:
  bench: { base_url: "http://$HOST:$UP_PORT", pool: { max_connections: 64 } }
  stub: { stub: { status: 200, headers: { Content-Type: application/json }, body_bytes: 300 } }
routes:
  - { name: json, match: { path: /json }, upstream: $4 }
YAML
}
write_config "$RUN_DIR/gw-proxy.yaml" "$GW_PROXY_PORT" "$GW_PROXY_ADMIN" bench true
write_config "$RUN_DIR/gw-stub.yaml" "$GW_STUB_PORT" "$GW_STUB_ADMIN" stub true
write_config "$RUN_DIR/gw-proxy-epoll.yaml" "$GW_PROXY_EPOLL_PORT" "$GW_PROXY_EPOLL_ADMIN" bench false
write_config "$RUN_DIR/gw-stub-epoll.yaml" "$GW_STUB_EPOLL_PORT" "$GW_STUB_EPOLL_ADMIN" stub false

require_free_ports "$UP_PORT" "$SLOW_PORT" "$NGX_PORT" "$NGX_TWIN_PORT" "$HAP_PORT" "$VAR_PORT" "$CADDY_PORT" \
    "$CADDY_RESPOND_PORT" "$GW_PROXY_PORT" "$GW_PROXY_ADMIN" "$GW_STUB_PORT" "$GW_STUB_ADMIN" "$GW_PROXY_EPOLL_PORT" "$GW_PROXY_EPOLL_ADMIN" \
    "$GW_STUB_EPOLL_PORT" "$GW_STUB_EPOLL_ADMIN"
log "[$MODE] starting the upstream and the targets: $TARGETS"
start_upstream
has nginx && start_nginx_proxy
has nginx-twin && start_nginx_twin
has haproxy && start_haproxy
has varnish && start_varnish_pass
has caddy && start_caddy caddy caddy-proxy.Caddyfile "http://$HOST:$CADDY_PORT/json"
has caddy-respond && start_caddy caddy-respond caddy-respond.Caddyfile "http://$HOST:$CADDY_RESPOND_PORT/json"
for gw in gw-proxy gw-stub gw-proxy-epoll gw-stub-epoll; do
    has "$gw" || continue
    spawn "$gw" "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/$gw.yaml"
    wait_http "http://$HOST:${ADMIN[$gw]}/readyz"
done
for t in $TARGETS; do   # every target answers the same body
    [[ "$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "http://$HOST:${PORT[$t]}/json")" == "200 300" ]] ||
        die "$t does not answer /json with 200 and 300 bytes"
done

UPSTREAM_PID=$(pid_of upstream)
target_pid() { [[ $1 == direct ]] || pid_of "$1"; }
for t in $TARGETS; do client wrk -t1 -c50 -d1s "http://$HOST:${PORT[$t]}/json" >/dev/null; done   # warm-up
for rep in $(seq "$REPS"); do
    for c in $CONNS; do
        for t in $TARGETS; do
            f="$OUT/${MODE}_c${c}_${t}_r${rep}.txt"
            pid=$(target_pid "$t")
            for attempt in $(seq $((GUARD_RETRIES + 1))); do
                guard_begin
                p0=$([[ -n "$pid" ]] && cpu_ticks "$pid" || echo -); u0=$(cpu_ticks "$UPSTREAM_PID"); s0=$(percpu_snap)
                client wrk -t1 -c"$c" -d"$DURATION" --latency "http://$HOST:${PORT[$t]}/json" >"$f"
                s1=$(percpu_snap); p1=$([[ -n "$pid" ]] && cpu_ticks "$pid" || echo -); u1=$(cpu_ticks "$UPSTREAM_PID")
                guard_end && break
                log "rep $rep c=$c $t: other processes took ${FOREIGN_PCT}% of a CPU during the run (try $attempt)"
            done
            [[ -z "$pid" ]] || _alive "$pid" || die "$t died under load (log: $RUN_DIR/logs/$t.log)"
            echo "clk_tck=$CLK_TCK proxy_ticks=$([[ -n "$pid" ]] && echo $((p1 - p0)) || echo -)" \
                "upstream_ticks=$((u1 - u0)) $(percpu_busy "$s0" "$s1") foreign_pct=$FOREIGN_PCT" >"${f%.txt}.cpu"
            log "rep $rep c=$c $t: $("$PY" "$TOOLS/benchlib.py" wrk "$f") other=${FOREIGN_PCT}%"
        done
    done
done
echo "loadavg_at_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/conditions.txt"
stop_all

"$PY" "$TOOLS/benchlib.py" summarize-throughput "$OUT" | tee "$OUT/summary.md"
