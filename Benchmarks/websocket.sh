#!/usr/bin/env bash
# WebSockets relayed: moya-gateway (`websocket: true`) against nginx's documented WebSocket proxying, both in front
# of the same Python `websockets` upstream (tools/ws_bench.py), and the upstream reached directly, in the same run.
#
#   rtt      N sequential round trips of a 1 KiB binary message on one connection: median and p99, and what each
#            proxy adds to the direct round trip
#   stream   MB MiB of 64 KiB binary messages one way to a sink: MiB/s, and the proxy's CPU seconds per GiB relayed
#   idle     HOLD_N tunnels held open at once: the proxy's RSS per tunnel (process tree, VmRSS) over its RSS before
#
# Each proxy runs on CPU $SERVER_CPU; the upstream and the client (Python, the slower parts) share CPU $CLIENT_CPU,
# so a proxy's CPU is its own. Proxy CPU comes from /proc/PID/stat ticks before and after each run. Targets are
# interleaved per repetition. All traffic on 127.0.0.1; every process is started with common.sh's spawn and stopped by
# PID on EXIT; every client run is bounded (`timeout -k 5 $CLIENT_TIMEOUT`, and ws_bench's own waits).
#
# Env: REPS=3 N=5000 MB=256 HOLD_N=1000 SKIP_BUILD=0 RUN_DIR=/tmp/moyabench-websocket WS_PORT=18590
# Output: progress on stderr, a markdown table and RATIO lines on stdout (also $RUN_DIR/results/websocket/summary.md).
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench-websocket}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
N="${N:-5000}"
MB="${MB:-256}"
HOLD_N="${HOLD_N:-1000}"
UP_WS_PORT="${WS_PORT:-18590}"
NGX_WS_PORT=$((UP_WS_PORT + 1))
GW_WS_PORT=$((UP_WS_PORT + 2))
GW_WS_ADMIN=$((UP_WS_PORT + 3))
OUT="$RESULTS_DIR/websocket"
WS_PY=/usr/bin/python3   # the system Python, where python3-websockets is installed
TOOL="$HERE/tools/ws_bench.py"

need nginx taskset swift "$WS_PY"
"$WS_PY" -c 'import websockets' || die "missing python3-websockets (scripts/install-deps.sh --test)"
build_gateway

install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT" "$RUN_DIR/conf"
record_env "$OUT"
cat >"$RUN_DIR/websocket.yaml" <<YAML
server: { listen: ["127.0.0.1:$GW_WS_PORT"], threads: 1, http2: false }
admin: { listen: "127.0.0.1:$GW_WS_ADMIN" }
logging: { access_log: false }
upstreams:
  ws: { base_url: "http://127.0.0.1:$UP_WS_PORT", timeout: { response: 60s } }
routes:
  - { name: ws, match: { path_prefix: /ws }, upstream: ws, rewrite: { strip_prefix: /ws }, websocket: true }
YAML
sed -e "s/@PORT@/$NGX_WS_PORT/g" -e "s/@UPSTREAM@/$UP_WS_PORT/g" "$HERE/conf/nginx-websocket.conf" \
    >"$RUN_DIR/conf/nginx-websocket.conf"
{
    build_conditions
    echo "websockets: $("$WS_PY" -c 'import websockets; print(websockets.__version__)')"
    echo "load: rtt n=$N of 1 KiB; stream ${MB} MiB in 64 KiB messages; reps=$REPS"
} >>"$OUT/conditions.txt"

require_free_ports "$UP_WS_PORT" "$NGX_WS_PORT" "$GW_WS_PORT" "$GW_WS_ADMIN"
SRV_SAVED=("${SRV[@]}")
SRV=("${CLI[@]}")
spawn ws-upstream "${SRV[@]}" "$WS_PY" "$TOOL" upstream --port "$UP_WS_PORT"
SRV=("${SRV_SAVED[@]}")
for _ in $(seq 100); do "$WS_PY" - "$UP_WS_PORT" <<'PY' 2>/dev/null && break || sleep 0.1
import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()
PY
done
CONF="$RUN_DIR/conf" start_nginx ws-nginx nginx-websocket.conf "http://$HOST:$NGX_WS_PORT/ready"
spawn ws-gateway "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/websocket.yaml"
wait_http "http://$HOST:$GW_WS_ADMIN/readyz"
declare -A URL=([direct]="ws://$HOST:$UP_WS_PORT" [nginx]="ws://$HOST:$NGX_WS_PORT/ws" [gateway]="ws://$HOST:$GW_WS_PORT/ws")
declare -A SPID=([direct]="" [nginx]=$(pid_of ws-nginx) [gateway]=$(pid_of ws-gateway))

run() {   # run TARGET MODE FILE ARGS... : one client run; writes its JSON and the proxy's ticks
    local t=$1 mode=$2 file=$3 p0=0 p1=0
    shift 3
    [[ -n "${SPID[$t]}" ]] && p0=$(cpu_ticks "${SPID[$t]}")
    client "$WS_PY" "$TOOL" "$mode" "$@" >"$file"
    [[ -n "${SPID[$t]}" ]] && p1=$(cpu_ticks "${SPID[$t]}")
    echo "{\"proxy_ticks\": $((p1 - p0)), \"clk_tck\": $CLK_TCK}" >"$file.cpu"
}
for t in direct nginx gateway; do   # warm-up, discarded
    run "$t" rtt "$OUT/warmup_$t.json" --url "${URL[$t]}/echo" --n 500
    run "$t" stream "$OUT/warmup_$t.stream.json" --url "${URL[$t]}/sink" --mb 32
done
for rep in $(seq "$REPS"); do
    for t in direct nginx gateway; do
        run "$t" rtt "$OUT/${t}_rtt_r$rep.json" --url "${URL[$t]}/echo" --n "$N"
        run "$t" stream "$OUT/${t}_stream_r$rep.json" --url "${URL[$t]}/sink" --mb "$MB"
        [[ -z "${SPID[$t]}" ]] || _alive "${SPID[$t]}" || die "$t died under load"
        log "rep $rep $t: $(cat "$OUT/${t}_rtt_r$rep.json") $(cat "$OUT/${t}_stream_r$rep.json")"
    done
done
rss_kb() {   # rss_kb PID : VmRSS of PID and its descendants, KiB
    local p t=0 v
    for p in "$1" $(_descendants "$1" | cut -d: -f1); do
        v=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null) || v=0
        t=$((t + ${v:-0}))
    done
    echo "$t"
}
for t in nginx gateway; do   # idle tunnels held open
    before=$(rss_kb "${SPID[$t]}")
    client_bg "$WS_PY" "$TOOL" hold --url "${URL[$t]}/echo" --n "$HOLD_N" --seconds 6 >"$OUT/${t}_hold.out"
    for _ in $(seq 300); do grep -q '^open' "$OUT/${t}_hold.out" 2>/dev/null && break; sleep 0.1; done
    sleep 1
    open=$(rss_kb "${SPID[$t]}")
    wait "$CLIENT_PID" || true
    grep -q "\"held\": $HOLD_N" "$OUT/${t}_hold.out" || die "$t did not hold $HOLD_N tunnels: $(cat "$OUT/${t}_hold.out")"
    echo "{\"before_kb\": $before, \"open_kb\": $open, \"tunnels\": $HOLD_N}" >"$OUT/${t}_idle.json"
    log "idle $t: $(cat "$OUT/${t}_idle.json")"
done
echo "loadavg_at_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/conditions.txt"
stop_all

"$PY" - "$OUT" "$MB" <<'PY' | tee "$OUT/summary.md"
import glob, json, statistics, sys
out, mb = sys.argv[1], int(sys.argv[2])

def runs(target, kind):
    rows = []
    for path in sorted(glob.glob(f"{out}/{target}_{kind}_r*.json")):
        row = json.load(open(path))
        cpu = json.load(open(path + ".cpu"))
        row["cpu_s"] = cpu["proxy_ticks"] / cpu["clk_tck"]
        rows.append(row)
    return rows

med = statistics.median
names = {"direct": "direct to the upstream", "nginx": "nginx proxy_pass (WebSocket)", "gateway": "moya-gateway websocket: true"}
stats = {}
for t in ("direct", "nginx", "gateway"):
    rtt, stream = runs(t, "rtt"), runs(t, "stream")
    stats[t] = {
        "median": med([r["median_us"] for r in rtt]), "p99": med([r["p99_us"] for r in rtt]),
        "mib_s": med([r["mib_s"] for r in stream]),
        "cpu_per_gib": med([r["cpu_s"] * 1024 / mb for r in stream]),
        "rtt_cpu_us": med([r["cpu_s"] * 1e6 / r["n"] for r in rtt]),
    }
base = stats["direct"]["median"]
print("| target | RTT median µs | RTT p99 µs | added to direct µs | proxy CPU µs per round trip | stream MiB/s | proxy CPU s per GiB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in ("direct", "nginx", "gateway"):
    s = stats[t]
    proxied = t != "direct"
    print(f"| {names[t]} | {s['median']:.0f} | {s['p99']:.0f} | {s['median'] - base:.0f} | "
          f"{s['rtt_cpu_us']:.1f} | {s['mib_s']:.0f} | {s['cpu_per_gib']:.2f} |" if proxied else
          f"| {names[t]} | {s['median']:.0f} | {s['p99']:.0f} | – | – | {s['mib_s']:.0f} | – |")
g, n = stats["gateway"], stats["nginx"]
print()
print("| proxy | RSS before, MiB | RSS with the tunnels open, MiB | KiB per idle tunnel |")
print("|---|---:|---:|---:|")
idle = {}
for t in ("nginx", "gateway"):
    row = json.load(open(f"{out}/{t}_idle.json"))
    idle[t] = (row["open_kb"] - row["before_kb"]) / row["tunnels"]
    print(f"| {names[t]} | {row['before_kb'] / 1024:.1f} | {row['open_kb'] / 1024:.1f} | {idle[t]:.1f} |")
print()
print(f"RATIO added_rtt gateway/nginx = {(g['median'] - base) / max(n['median'] - base, 1e-9):.2f}")
print(f"RATIO cpu_per_round_trip gateway/nginx = {g['rtt_cpu_us'] / max(n['rtt_cpu_us'], 1e-9):.2f}")
print(f"RATIO cpu_per_gib gateway/nginx = {g['cpu_per_gib'] / max(n['cpu_per_gib'], 1e-9):.2f}")
print(f"RATIO stream_mib_s gateway/nginx = {g['mib_s'] / max(n['mib_s'], 1e-9):.2f}")
print(f"RATIO kib_per_idle_tunnel gateway/nginx = {idle['gateway'] / max(idle['nginx'], 1e-9):.2f}")
PY
