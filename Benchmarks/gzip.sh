#!/usr/bin/env bash
# gzip cost per request and per KiB: moya-gateway (stub route, `server.compression` on, zlib level 1) against nginx
# (`gzip on; gzip_comp_level 1`, static file) serving the same compressible JSON body of $KIB KiB, each fetched as
# identity and as gzip (wrk -H 'Accept-Encoding: gzip'), in the same run, same pinning.
#
#   wrk -t1 -c$CONNS -d${DURATION}s  http://127.0.0.1:PORT/data.json   [-H 'Accept-Encoding: gzip']
#
# The gzip cost is the CPU per request with gzip minus the CPU per request as identity, for each server: it leaves out
# what the gateway's per-request overhead costs beside nginx (that is gateway.sh's subject) and compares the
# compression alone. Level 1 is nginx's default and the gateway's (CompressionPolicy's default; there is no config
# key for the level).
#
# Servers on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU (PIN=1); REPS interleaved repetitions after a 1 s warm-up each;
# medians. Server CPU from /proc/PID/stat ticks before/after each run (process tree, all threads). All traffic on
# 127.0.0.1; every process started with common.sh's spawn and stopped by PID on EXIT; every run bounded (wrk -d, under
# `timeout -k 5 $CLIENT_TIMEOUT`).
#
# Env: REPS=3 DURATION=5 CONNS=50 KIB=16 SKIP_BUILD=0 RUN_DIR=/tmp/moyabench-gzip NGX_GZIP_PORT=18480
#      GW_GZIP_PORT=18481 GW_GZIP_ADMIN=18482 QUIET_PCT=5 QUIET_MAX_WAIT=30 GUARD_RETRIES=1
# Output: progress on stderr, a markdown table on stdout (also $RUN_DIR/results/gzip/summary.md).
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench-gzip}"
export QUIET_MAX_WAIT="${QUIET_MAX_WAIT:-30}"
export GUARD_RETRIES="${GUARD_RETRIES:-1}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-5}"
CONNS="${CONNS:-50}"
KIB="${KIB:-16}"
LEVEL=1
NGX_GZIP_PORT="${NGX_GZIP_PORT:-18480}"
GW_GZIP_PORT="${GW_GZIP_PORT:-18481}"
GW_GZIP_ADMIN="${GW_GZIP_ADMIN:-18482}"
OUT="$RESULTS_DIR/gzip"

need wrk nginx curl taskset swift "$PY"
build_gateway

install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT" "$RUN_DIR/gzip" "$RUN_DIR/conf"
record_env "$OUT"

# The body: JSON records (compressible like a typical API answer), exactly KIB KiB.
"$PY" - "$RUN_DIR/gzip/data.json" "$KIB" <<'PY'
import json, sys
path, size = sys.argv[1], int(sys.argv[2]) * 1024
items, i = [], 0
while True:
    items.append({"id": i, "name": f"user {i}", "email": f"user{i}@example.invalid", "active": i % 3 != 0,
                  "score": (i * 7919) % 1000, "tags": ["alpha", "beta"] if i % 2 else ["gamma"]})
    text = json.dumps(items, separators=(",", ":"))
    if len(text) >= size:
        break
    i += 1
open(path, "w").write((text[: size - 1] + "]") if len(text) > size else text)
PY
cat >"$RUN_DIR/gzip/gateway.yaml" <<YAML
server:
  listen: ["127.0.0.1:$GW_GZIP_PORT"]
  threads: 1
  compression: { gzip: true, min_bytes: 1024 }
admin: { listen: "127.0.0.1:$GW_GZIP_ADMIN" }
logging: { access_log: false }
upstreams:
  data: { stub: { status: 200, headers: { Content-Type: application/json }, body_file: data.json } }
routes:
  - { name: data, match: { path: /data.json }, upstream: data }
YAML
sed -e "s/@PORT@/$NGX_GZIP_PORT/g" -e "s/@LEVEL@/$LEVEL/g" "$HERE/conf/nginx-gzip.conf" >"$RUN_DIR/conf/nginx-gzip.conf"
{
    build_conditions
    echo "zlib: $(dpkg-query -W -f='${Version}' zlib1g 2>/dev/null)"
    echo "load: wrk -t1 -c$CONNS -d${DURATION}s; body ${KIB} KiB JSON ($(stat -c %s "$RUN_DIR/gzip/data.json") bytes); gzip level $LEVEL; reps=$REPS"
} >>"$OUT/conditions.txt"

require_free_ports "$NGX_GZIP_PORT" "$GW_GZIP_PORT" "$GW_GZIP_ADMIN"
CONF="$RUN_DIR/conf" start_nginx nginx-gzip nginx-gzip.conf "http://$HOST:$NGX_GZIP_PORT/data.json"
spawn gateway-gzip "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/gzip/gateway.yaml"
wait_http "http://$HOST:$GW_GZIP_ADMIN/readyz"
declare -A PORT=([nginx]=$NGX_GZIP_PORT [gateway]=$GW_GZIP_PORT)
declare -A SPID=([nginx]=$(pid_of nginx-gzip) [gateway]=$(pid_of gateway-gzip))

# Both must send the same body, and gzip when asked; record the sizes on the wire.
for s in nginx gateway; do
    url="http://$HOST:${PORT[$s]}/data.json"
    cmp -s <(curl -s "$url") "$RUN_DIR/gzip/data.json" || die "$s does not serve the file as identity"
    cmp -s <(curl -s --compressed "$url") "$RUN_DIR/gzip/data.json" || die "$s: gzip body does not decode to the file"
    [[ "$(curl -s -o /dev/null -D - -H 'Accept-Encoding: gzip' "$url" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-encoding"{print $2}')" == gzip ]] ||
        die "$s does not gzip"
    echo "$s identity_bytes=$(curl -s -o /dev/null -w '%{size_download}' "$url")" \
        "gzip_bytes=$(curl -s -o /dev/null -w '%{size_download}' -H 'Accept-Encoding: gzip' "$url")" >>"$OUT/sizes.txt"
done

run_wrk() {   # run_wrk SERVER ENCODING FILE
    local hdr=()
    [[ $2 == gzip ]] && hdr=(-H 'Accept-Encoding: gzip')
    client wrk -t1 -c"$CONNS" -d"${DURATION}s" "${hdr[@]}" "http://$HOST:${PORT[$1]}/data.json" >"$3"
}
for s in nginx gateway; do for e in identity gzip; do   # warm-up, discarded
    DURATION=1 run_wrk "$s" "$e" /dev/null
done; done
for rep in $(seq "$REPS"); do
    for s in nginx gateway; do
        for e in identity gzip; do
            f="$OUT/${s}_${e}_r${rep}.txt"
            for attempt in $(seq $((GUARD_RETRIES + 1))); do
                guard_begin
                p0=$(cpu_ticks "${SPID[$s]}"); c0=$(percpu_snap)
                run_wrk "$s" "$e" "$f"
                c1=$(percpu_snap); p1=$(cpu_ticks "${SPID[$s]}")
                guard_end && break
                log "rep $rep $s $e: other processes took ${FOREIGN_PCT}% of a CPU (try $attempt)"
            done
            _alive "${SPID[$s]}" || die "$s died under load"
            echo "clk_tck=$CLK_TCK proxy_ticks=$((p1 - p0)) $(percpu_busy "$c0" "$c1") foreign_pct=$FOREIGN_PCT" >"${f%.txt}.cpu"
            log "rep $rep $s $e: $("$PY" "$TOOLS/benchlib.py" wrk "$f") ticks=$((p1 - p0))"
        done
    done
done
echo "loadavg_at_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/conditions.txt"
stop_all

"$PY" - "$OUT" "$TOOLS" "$KIB" <<'PY' | tee "$OUT/summary.md"
import glob, statistics, sys
out, tools, kib = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, tools)
import benchlib

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"

sizes = {}
for line in open(f"{out}/sizes.txt"):
    name, *kv = line.split()
    sizes[name] = dict(x.split("=") for x in kv)
stats = {}
print(f"| server | encoding | req/s median (min-max) | server CPU µs/req | bytes on the wire | errors |")
print("|---|---|---|---|---|---|")
for s in ("nginx", "gateway"):
    for e in ("identity", "gzip"):
        rows = []
        for f in sorted(glob.glob(f"{out}/{s}_{e}_r*.txt")):
            w = benchlib.parse_wrk(f)
            rows.append((w, benchlib.parse_cpu(f[:-4] + ".cpu", w["requests"])))
        rps = [w["rps"] for w, _ in rows if w["rps"]]
        cpu = med([c["proxy_cpu_us"] for _, c in rows])
        stats[(s, e)] = (med(rps), cpu)
        errors = sum(w["non2xx"] + w["socket_errors"] for w, _ in rows)
        print(f"| {'moya-gateway' if s == 'gateway' else 'nginx'} | {e} | {fmt(med(rps))} "
              f"({fmt(min(rps) if rps else None)}-{fmt(max(rps) if rps else None)}) | {fmt(cpu, 1)} "
              f"| {sizes.get(s, {}).get(e + '_bytes', '-')} | {errors} |")
print()
print(f"| server | gzip cost µs/req (gzip − identity) | gzip cost µs per KiB of body ({kib} KiB) |")
print("|---|---|---|")
cost = {}
for s in ("nginx", "gateway"):
    g, i = stats[(s, "gzip")][1], stats[(s, "identity")][1]
    cost[s] = (g - i) if g is not None and i is not None else None
    print(f"| {'moya-gateway' if s == 'gateway' else 'nginx'} | {fmt(cost[s], 1)} "
          f"| {fmt(cost[s] / kib if cost[s] is not None else None, 2)} |")
print()
if cost["nginx"] and cost["gateway"] is not None and cost["nginx"] > 0:
    print(f"RATIO gzip.cost_per_kib cpu={cost['gateway'] / cost['nginx']:.3f} ours_cpu={cost['gateway'] / kib:.2f} "
          f"ref_cpu={cost['nginx'] / kib:.2f}")
g, n = stats[("gateway", "gzip")], stats[("nginx", "gzip")]
if g[0] and n[0] and g[1] and n[1]:
    print(f"RATIO gzip.total rps={g[0] / n[0]:.3f} cpu={g[1] / n[1]:.3f} ours_rps={g[0]:.0f} ours_cpu={g[1]:.1f} "
          f"ref_rps={n[0]:.0f} ref_cpu={n[1]:.1f}")
PY
