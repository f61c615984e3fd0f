#!/usr/bin/env bash
# moya-gateway against nginx (and HAProxy) proxying the same nginx upstream, through the shared reference harness:
# GET /json (300-byte JSON) with wrk -t1 -c50 / -c1, servers pinned to CPU 1, wrk to CPU 0, medians of REPS runs.
# Two gateways are measured: `gw-proxy` proxies /json to the harness's upstream on :18080 (upstream keep-alive pool
# 64, like nginx's), `gw-stub` answers /json from a stub upstream with a 300-byte body (stub mode vs nginx `return 200`,
# which is the harness's `direct` target). Access logging is off in both, as in the nginx configs (ACCESS_LOG=true
# turns it on).
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
SHARED=${SHARED_BENCH:-$root/../shared/bench}
[ -f "$SHARED/01_throughput.sh" ] || { echo "gateway.sh: the reference harness is missing at $SHARED" >&2; exit 1; }
cd "$root"
swift build -c release --product moya-gateway >&2
dir=$(mktemp -d /tmp/moya-gateway-bench.XXXXXX)
pidfile="$dir/gateway.pids"
cleanup() {
    local pid
    for pid in $(cat "$pidfile" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
write_config() {  # write_config FILE PORT ADMIN UPSTREAM
    cat >"$1" <<YAML
server: { listen: ["127.0.0.1:$2"], threads: 1, http2: false }
admin: { listen: "127.0.0.1:$3" }
logging: { access_log: ${ACCESS_LOG:-false} }
upstreams:
  bench: { base_url: "http://127.0.0.1:18080", pool: { max_connections: 64 } }
  stub: { stub: { status: 200, headers: { Content-Type: application/json }, body_bytes: 300 } }
routes:
  - { name: json, match: { path: /json }, upstream: $4 }
YAML
}
write_config "$dir/proxy.yaml" 18200 18201 bench
write_config "$dir/stub.yaml" 18202 18203 stub
# The gateways are started by the process that then becomes the harness (exec keeps the pid), so that they are its
# children: its quiet-machine guard counts the CPU of every process outside its own tree as "other load", and would
# otherwise count the gateways' own CPU during their runs (and retry each of them for it).
(
    for config in proxy stub; do
        taskset -c 1 .build/release/moya-gateway serve --config "$dir/$config.yaml" >"$dir/$config.log" 2>&1 &
        echo $! >>"$pidfile"
    done
    for admin in 18201 18203; do
        for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$admin/readyz" >/dev/null && break; sleep 0.1; done
    done
    read -r -d '' proxy_pid stub_pid <"$pidfile" || true
    MODES=${MODES:-pinned} TARGETS=${TARGETS:-"direct nginx"} \
        EXTRA_TARGETS="gw-proxy=18200@$proxy_pid gw-stub=18202@$stub_pid" exec "$SHARED/01_throughput.sh"
)
