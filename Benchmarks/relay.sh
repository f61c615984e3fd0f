#!/usr/bin/env bash
# Long bodies relayed: moya-gateway against nginx `proxy_pass` (upstream keep-alive, default proxy buffers), both in
# front of the same nginx serving files with sendfile, in the same run, each with and without response buffering:
#   nginx          proxy_buffering on, no temporary files (proxy_max_temp_file_size 0: past the buffers, at the
#                  client's pace)
#   nginx-temp     proxy_buffering on with temporary files (nginx's default proxy_max_temp_file_size 1024m)
#   gateway        server.buffering (the default: memory, then a temporary file)
#   gateway-unbuf  a `buffering: false` route of the same process (relayed at the client's pace)
#
#   one GET of a $BIG_MB MiB body with curl -o /dev/null           wall time and proxy CPU, REPS times
#   wrk -t1 -c$CONNS -d${DURATION}s on a 1 MiB and a 512 KiB body   req/s and proxy CPU per request
#
# Each proxy has CPU $SERVER_CPU to itself; the file upstream, curl and wrk share CPU $CLIENT_CPU (as layers.sh's
# ALONE=1). The proxies run one after the other, interleaved per repetition, after a warm-up each. Proxy CPU comes
# from /proc/PID/stat ticks before and after each run (all threads). All traffic on 127.0.0.1; every process is
# started with common.sh's spawn and stopped by PID on EXIT; every run is bounded (curl --max-time, wrk -d, both under
# `timeout -k 5 $CLIENT_TIMEOUT`).
#
# Env: REPS=3 DURATION=4 CONNS=20 BIG_MB=1024 SKIP_BUILD=0 NGX_BUFFERS= RUN_DIR=/tmp/moyabench-relay RELAY_PORT=18490
#      PROXIES="nginx nginx-temp gateway gateway-unbuf" (a subset runs only those)
# Output: progress on stderr, a markdown table and RATIO lines on stdout (also $RUN_DIR/results/relay/summary.md).
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench-relay}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-4}"
CONNS="${CONNS:-20}"
BIG_MB="${BIG_MB:-1024}"
# nginx's proxy buffers: its defaults (8 of 4 or 8 KiB) unless set, e.g. NGX_BUFFERS='proxy_buffers 8 64k; proxy_buffer_size 64k;'
NGX_BUFFERS="${NGX_BUFFERS:-}"
FILES_PORT="${RELAY_PORT:-18490}"
NGX_PORT_RELAY=$((FILES_PORT + 1))
GW_PORT_RELAY=$((FILES_PORT + 2))
GW_ADMIN_RELAY=$((FILES_PORT + 3))
NGX_TEMP_PORT_RELAY=$((FILES_PORT + 4))
PROXIES="${PROXIES:-nginx nginx-temp gateway gateway-unbuf}"
OUT="$RESULTS_DIR/relay"

need wrk nginx curl taskset swift "$PY"
build_gateway

install_traps
kill_stale
rm -rf "$OUT" "$RUN_DIR/relay/tmp"; mkdir -p "$OUT" "$RUN_DIR/relay/www" "$RUN_DIR/relay/tmp" "$RUN_DIR/conf"
record_env "$OUT"
head -c $((BIG_MB << 20)) /dev/zero >"$RUN_DIR/relay/www/big.bin"
head -c $((1 << 20)) /dev/zero >"$RUN_DIR/relay/www/mb1.bin"
head -c $((512 << 10)) /dev/zero >"$RUN_DIR/relay/www/k512.bin"
cat >"$RUN_DIR/relay/gateway.yaml" <<YAML
server: { listen: ["127.0.0.1:$GW_PORT_RELAY"], threads: 1, http2: false, buffering: { temp_dir: "$RUN_DIR/relay/tmp" } }
admin: { listen: "127.0.0.1:$GW_ADMIN_RELAY" }
logging: { access_log: false }
upstreams:
  files: { base_url: "http://127.0.0.1:$FILES_PORT", pool: { max_connections: 64 } }
routes:
  - { name: files, match: { path_prefix: /f }, upstream: files, rewrite: { strip_prefix: /f } }
  - { name: unbuffered, match: { path_prefix: /u }, upstream: files, rewrite: { strip_prefix: /u }, buffering: false }
YAML
sed "s/@PORT@/$FILES_PORT/g" "$HERE/conf/nginx-relay-files.conf" >"$RUN_DIR/conf/nginx-relay-files.conf"
sed -e "s/@PORT@/$NGX_PORT_RELAY/g" -e "s/@UPSTREAM@/$FILES_PORT/g" -e "s/@BUFFERS@/$NGX_BUFFERS/" "$HERE/conf/nginx-relay-proxy.conf" \
    >"$RUN_DIR/conf/nginx-relay-proxy.conf"
# The same proxy with temporary files allowed (nginx's default proxy_max_temp_file_size, 1024m).
sed -e "s/@PORT@/$NGX_TEMP_PORT_RELAY/g" -e "s/@UPSTREAM@/$FILES_PORT/g" -e "s/@BUFFERS@/$NGX_BUFFERS/" \
    -e "s/proxy_max_temp_file_size 0;/proxy_max_temp_file_size 1024m;/" "$HERE/conf/nginx-relay-proxy.conf" \
    >"$RUN_DIR/conf/nginx-relay-proxy-temp.conf"
grep -q "proxy_max_temp_file_size 1024m;" "$RUN_DIR/conf/nginx-relay-proxy-temp.conf" || die "nginx-temp: no temporary files"
{
    build_conditions
    echo "nginx buffers: ${NGX_BUFFERS:-defaults}"
    echo "load: curl of ${BIG_MB} MiB x$REPS; wrk -t1 -c$CONNS -d${DURATION}s on 1 MiB and 512 KiB; reps=$REPS"
    echo "proxies: $PROXIES (nginx-temp: proxy_max_temp_file_size 1024m; gateway: server.buffering defaults, temp_dir $RUN_DIR/relay/tmp)"
    echo "temp file system: $(df -T "$RUN_DIR/relay/tmp" | awk 'NR == 2 {print $2}')"
    echo "loadavg_at_start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$OUT/conditions.txt"

require_free_ports "$FILES_PORT" "$NGX_PORT_RELAY" "$GW_PORT_RELAY" "$GW_ADMIN_RELAY" "$NGX_TEMP_PORT_RELAY"
# The upstream beside the load generators; each proxy on the server CPU.
SRV_SAVED=("${SRV[@]}")
SRV=("${CLI[@]}")
CONF="$RUN_DIR/conf" start_nginx relay-files nginx-relay-files.conf "http://$HOST:$FILES_PORT/mb1.bin"
SRV=("${SRV_SAVED[@]}")
CONF="$RUN_DIR/conf" start_nginx relay-nginx nginx-relay-proxy.conf "http://$HOST:$NGX_PORT_RELAY/f/mb1.bin"
CONF="$RUN_DIR/conf" start_nginx relay-nginx-temp nginx-relay-proxy-temp.conf "http://$HOST:$NGX_TEMP_PORT_RELAY/f/mb1.bin"
spawn relay-gateway "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/relay/gateway.yaml"
wait_http "http://$HOST:$GW_ADMIN_RELAY/readyz"
declare -A PORT=([nginx]=$NGX_PORT_RELAY [nginx-temp]=$NGX_TEMP_PORT_RELAY [gateway]=$GW_PORT_RELAY
                 [gateway-unbuf]=$GW_PORT_RELAY)
declare -A PREFIX=([nginx]=/f [nginx-temp]=/f [gateway]=/f [gateway-unbuf]=/u)
declare -A SPID=([nginx]=$(pid_of relay-nginx) [nginx-temp]=$(pid_of relay-nginx-temp) [gateway]=$(pid_of relay-gateway)
                 [gateway-unbuf]=$(pid_of relay-gateway))

# All relay every byte with the upstream's length.
for s in $PROXIES; do
    url="http://$HOST:${PORT[$s]}${PREFIX[$s]}/mb1.bin"
    cmp -s <(curl -s "$url") "$RUN_DIR/relay/www/mb1.bin" || die "$s does not relay the file intact"
    curl -s -o /dev/null -D - "$url" | tr -d '\r' | grep -qi '^content-length: 1048576$' || die "$s drops the length"
done

big() {   # big SERVER FILE : one GET of the big body; writes wall seconds and proxy ticks
    local s=$1 p0 p1 t0 t1
    p0=$(cpu_ticks "${SPID[$s]}"); t0=$(date +%s%N)
    client curl -s --max-time "$CLIENT_TIMEOUT" -o /dev/null -w '%{size_download}' "http://$HOST:${PORT[$s]}${PREFIX[$s]}/big.bin" >"$2.size"
    t1=$(date +%s%N); p1=$(cpu_ticks "${SPID[$s]}")
    [[ "$(cat "$2.size")" == $((BIG_MB << 20)) ]] || die "$s relayed $(cat "$2.size") bytes of $((BIG_MB << 20))"
    echo "wall_ns=$((t1 - t0)) proxy_ticks=$((p1 - p0)) clk_tck=$CLK_TCK" >"$2"
}
many() {   # many SERVER BODY FILE : wrk on one body size
    local s=$1 p0 p1
    p0=$(cpu_ticks "${SPID[$s]}")
    client wrk -t1 -c"$CONNS" -d"${DURATION}s" "http://$HOST:${PORT[$s]}${PREFIX[$s]}/$2.bin" >"$3"
    p1=$(cpu_ticks "${SPID[$s]}")
    echo "clk_tck=$CLK_TCK proxy_ticks=$((p1 - p0))" >"${3%.txt}.cpu"
}
for s in $PROXIES; do   # warm-up, discarded
    big "$s" "$OUT/warmup_$s"
    DURATION=1 many "$s" mb1 "$OUT/warmup_$s.txt"
done
for rep in $(seq "$REPS"); do
    for s in $PROXIES; do
        big "$s" "$OUT/${s}_big_r$rep"
        for body in mb1 k512; do many "$s" "$body" "$OUT/${s}_${body}_r$rep.txt"; done
        _alive "${SPID[$s]}" || die "$s died under load"
        log "rep $rep $s: $(cat "$OUT/${s}_big_r$rep")"
    done
done
echo "loadavg_at_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/conditions.txt"
left=$(find "$RUN_DIR/relay/tmp" -mindepth 1 | wc -l)
echo "gateway temp_dir entries at the end: $left (its files never have a name)" >>"$OUT/conditions.txt"
stop_all

"$PY" - "$OUT" "$TOOLS" "$BIG_MB" "$PROXIES" <<'PY' | tee "$OUT/summary.md"
import glob, statistics, sys
out, tools, big_mb, proxies = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
sys.path.insert(0, tools)
import benchlib

def kv(path):
    return {k: int(v) for k, v in (x.split("=") for x in open(path).read().split())}

def med(xs):
    return statistics.median(xs) if xs else None

names = {"nginx": "nginx proxy_pass, no temp files", "nginx-temp": "nginx proxy_pass, temp files (1024m)",
         "gateway": "moya-gateway, buffered", "gateway-unbuf": "moya-gateway, buffering: false"}
stats = {}
print(f"| proxy | {big_mb} MiB: wall s | {big_mb} MiB: proxy CPU s | 1 MiB: req/s | 1 MiB: CPU µs/req "
      f"| 512 KiB: req/s | 512 KiB: CPU µs/req |")
print("|---|---:|---:|---:|---:|---:|---:|")
for s in proxies:
    bigs = [kv(f) for f in sorted(glob.glob(f"{out}/{s}_big_r*")) if not f.endswith(".size")]
    wall = med([b["wall_ns"] / 1e9 for b in bigs])
    cpu = med([b["proxy_ticks"] / b["clk_tck"] for b in bigs])
    row = [wall, cpu]
    for body in ("mb1", "k512"):
        rps, us = [], []
        for f in sorted(glob.glob(f"{out}/{s}_{body}_r*.txt")):
            w = benchlib.parse_wrk(f)
            c = benchlib.parse_cpu(f[:-4] + ".cpu", w["requests"])
            if w["rps"]: rps.append(w["rps"])
            if c["proxy_cpu_us"] is not None: us.append(c["proxy_cpu_us"])
        row += [med(rps), med(us)]
    stats[s] = row
    print(f"| {names[s]} | {row[0]:.2f} | {row[1]:.2f} | {row[2]:,.0f} | {row[3]:,.0f} | {row[4]:,.0f} | {row[5]:,.0f} |")
print()
def ratios(label, a, b):
    if a not in stats or b not in stats:
        return
    g, n = stats[a], stats[b]
    print(f"RATIO {label} relay.big wall={g[0] / n[0]:.3f} cpu={g[1] / n[1]:.3f} ({a} / {b}; below 1 is better)")
    print(f"RATIO {label} relay.1mib rps={g[2] / n[2]:.3f} cpu={g[3] / n[3]:.3f}")
    print(f"RATIO {label} relay.512kib rps={g[4] / n[4]:.3f} cpu={g[5] / n[5]:.3f}")
ratios("buffered", "gateway", "nginx-temp")
ratios("unbuffered", "gateway-unbuf", "nginx")
ratios("buffering-cost", "gateway", "gateway-unbuf")
PY
