#!/usr/bin/env bash
# Where the time goes: one short profile of hello-server under wrk and of ClientBench against nginx.
#
#   perf stat (software events: task-clock, context switches, migrations, page faults) of the process under load,
#   then perf record (cpu-clock sampling, 999 Hz; this VM exposes no hardware counters, so no cycles or
#   instructions) and the top symbols, demangled with `swift demangle --simplified`.
#   Without a usable perf it falls back to valgrind --tool=callgrind on a bounded run (wrk -d2s against it).
#
# Same pinning and servers as run.sh (hello-server and nginx on CPU 1, load on CPU 0), everything on 127.0.0.1,
# every process stopped by PID on EXIT, every load run bounded. Build first (run.sh, or SKIP_BUILD=0 here).
# GATEWAY=1 profiles moya-gateway instead (release build of the current tree): one gateway pinned to CPU 1 with a
# stub route (/stub, 300-byte body) and a proxied route (/json) to a local nginx upstream on CPU 1; wrk -t1 -c50 on
# CPU 0. Prints CPU µs per request (process CPU from /proc over a timed wrk run) and the top symbols, self and
# cumulative, for each route.
# Env: SECONDS_PROFILED=4 TOP=25 RUN_DIR=/tmp/moyabench-profile SKIP_BUILD=1 GATEWAY=0 GW_PORT=18480
# Output: the reports on stdout; perf.data and raw reports under $RUN_DIR/results/profile/.
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench-profile}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SECS="${SECONDS_PROFILED:-4}"
TOP="${TOP:-25}"
OUT="$RESULTS_DIR/profile"
need wrk nginx taskset curl ss swift
demangle() { swift demangle --simplified; }
if [[ "${GATEWAY:-0}" == 1 ]]; then
    SKIP_BUILD="${SKIP_BUILD:-1}" build_gateway
    install_traps
    rm -rf "$OUT"; mkdir -p "$OUT" "$RUN_DIR/conf"
    gw_free() {
        local p=$1
        while ss -Hltn "sport = :$p" | grep -q .; do p=$((p + 1)); ((p < $1 + 100)) || die "no free port"; done
        echo "$p"
    }
    UP=$(gw_free "${GW_PORT:-18480}"); GW=$(gw_free $((UP + 1))); ADMIN=$(gw_free $((GW + 1)))
    sed "s/@PORT@/$UP/g" "$HERE/conf/nginx-hello.conf" >"$RUN_DIR/conf/nginx-hello.conf"
    CONF="$RUN_DIR/conf" start_nginx nginx-hello nginx-hello.conf "http://$HOST:$UP/"
    cat >"$RUN_DIR/gateway.yaml" <<YAML
server: { listen: ["$HOST:$GW"], threads: 1, http2: false }
admin: { listen: "$HOST:$ADMIN" }
logging: { access_log: false }
upstreams:
  bench: { base_url: "http://$HOST:$UP", pool: { max_connections: 64 } }
  stub: { stub: { status: 200, headers: { Content-Type: application/json }, body_bytes: 300 } }
routes:
  - { name: json, match: { path: /json }, upstream: bench }
  - { name: stub, match: { path: /stub }, upstream: stub }
YAML
    spawn moya-gateway "${SRV[@]}" "$GW_BIN" serve --config "$RUN_DIR/gateway.yaml"
    wait_http "http://$HOST:$ADMIN/readyz"
    gpid=$(pid_of moya-gateway)
    ticks() { awk '{print $14 + $15}' "/proc/$gpid/stat"; }
    for path in stub json; do
        client wrk -t1 -c50 -d1s "http://$HOST:$GW/$path" >/dev/null
        t0=$(ticks)
        client wrk -t1 -c50 -d"${SECS}s" "http://$HOST:$GW/$path" >"$OUT/wrk-gateway-$path.txt"
        t1=$(ticks)
        reqs=$(awk '/requests in/ {print $1}' "$OUT/wrk-gateway-$path.txt")
        rps=$(awk '/Requests\/sec/ {print $2}' "$OUT/wrk-gateway-$path.txt")
        echo "#### moya-gateway /$path: $rps req/s (wrk -t1 -c50, ${SECS} s), load $(cut -d' ' -f1 /proc/loadavg)"
        "$PY" -c "print(f'  CPU per request: {($t1 - $t0) / $(getconf CLK_TCK) * 1e6 / $reqs:.1f} µs')"
        client_bg wrk -t1 -c50 -d$((SECS + 2))s "http://$HOST:$GW/$path" >/dev/null
        wpid=$CLIENT_PID
        sleep 1
        timeout -k 5 $((SECS + 30)) perf record -q -F 999 -e cpu-clock -g -o "$OUT/perf-gateway-$path.data" \
            -p "$gpid" -- sleep "$SECS" 2>/dev/null
        wait "$wpid"
        for mode in no-children children; do
            echo "#### /$path: top $TOP symbols ($mode)"
            echo '```'
            { perf report -i "$OUT/perf-gateway-$path.data" --"$mode" --sort symbol --stdio -q -g none 2>/dev/null || true; } \
                | grep -v '^$' | sed -n "1,${TOP}p" | demangle | cut -c1-160 | sed -E 's/ +$//'
            echo '```'
        done
    done
    stop_all
    exit 0
fi

if [[ "${SKIP_BUILD:-1}" != 1 ]]; then
    (cd "$ROOT" && swift build -c release --product hello-server >&2 && swift build -c release --product ClientBench >&2)
fi
BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)"
[[ -x "$BIN/hello-server" && -x "$BIN/ClientBench" ]] || die "build hello-server and ClientBench first (Benchmarks/run.sh)"

free_port() {
    local p=$1
    while ss -Hltn "sport = :$p" | grep -q .; do p=$((p + 1)); ((p < $1 + 100)) || die "no free port"; done
    echo "$p"
}
PERF=1
if ! command -v perf >/dev/null || ! perf stat -e task-clock -- true >/dev/null 2>&1; then
    PERF=0
    command -v valgrind >/dev/null || die "neither perf nor valgrind usable: apt-get install -y linux-perf valgrind"
fi

install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT"
NGX_PORT_H=$(free_port 18280)
HELLO_PORT_H=$(free_port $((NGX_PORT_H + 1)))
mkdir -p "$RUN_DIR/conf"
sed "s/@PORT@/$NGX_PORT_H/g" "$HERE/conf/nginx-hello.conf" >"$RUN_DIR/conf/nginx-hello.conf"
CONF="$RUN_DIR/conf" start_nginx nginx-hello nginx-hello.conf "http://$HOST:$NGX_PORT_H/"


if [[ $PERF == 1 ]]; then
    spawn hello-server "${SRV[@]}" "$BIN/hello-server" --port "$HELLO_PORT_H" --threads 1
    wait_http "http://$HOST:$HELLO_PORT_H/"
    hpid=$(pid_of hello-server)
    for target in hello-server; do
        log "perf: wrk -t1 -c50 against $target for $((SECS + 2)) s; stat then record for $SECS s each"
        client_bg wrk -t1 -c50 -d$((2 * SECS + 3))s "http://$HOST:$HELLO_PORT_H/" >"$OUT/wrk-$target.txt"
        wpid=$CLIENT_PID
        sleep 1
        timeout -k 5 $((SECS + 10)) perf stat -e task-clock,context-switches,cpu-migrations,page-faults \
            -p "$hpid" -- sleep "$SECS" 2>"$OUT/perf-stat-$target.txt"
        timeout -k 5 $((SECS + 30)) perf record -q -F 999 -e cpu-clock -g -o "$OUT/perf-$target.data" \
            -p "$hpid" -- sleep "$SECS" 2>/dev/null
        wait "$wpid"
    done
    if command -v strace >/dev/null; then
        # syscalls per request of hello-server and of nginx (strace slows them down; only the counts matter)
        for target in hello-server nginx-hello; do
            spid=$(pid_of "$target"); port=$HELLO_PORT_H
            [[ $target == nginx-hello ]] && { spid=$(_descendants "$spid" | head -1 | cut -d: -f1); port=$NGX_PORT_H; }
            log "strace -c: $target (pid $spid) under wrk -c50 for 3 s"
            client_bg wrk -t1 -c50 -d6s "http://$HOST:$port/" >"$OUT/wrk-strace-$target.txt"
            wpid=$CLIENT_PID
            sleep 1
            timeout -s INT -k 5 3 strace -c -f -p "$spid" -o "$OUT/strace-$target.txt" 2>/dev/null || true
            wait "$wpid"
        done
    fi
    log "perf: ClientBench -> nginx for $SECS s (stat, then record)"
    "${CLI[@]}" timeout -k 5 $((SECS + 30)) perf stat -e task-clock,context-switches,cpu-migrations,page-faults \
        -- "$BIN/ClientBench" --url "http://$HOST:$NGX_PORT_H/" --duration "$SECS" --warmup 0 \
        >"$OUT/clientbench-stat.json" 2>"$OUT/perf-stat-clientbench.txt"
    "${CLI[@]}" timeout -k 5 $((SECS + 60)) perf record -q -F 999 -e cpu-clock -g -o "$OUT/perf-clientbench.data" \
        -- "$BIN/ClientBench" --url "http://$HOST:$NGX_PORT_H/" --duration "$SECS" --warmup 0 \
        >"$OUT/clientbench-record.json" 2>/dev/null
    stop_all

    for t in hello-server clientbench; do
        reqs=""
        if [[ $t == hello-server ]]; then
            # requests during the perf stat window ≈ wrk's rate × SECS
            rps=$("$PY" "$TOOLS/benchlib.py" wrk "$OUT/wrk-$t.txt" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["rps"])')
            reqs=$("$PY" -c "print(int($rps * $SECS))")
        else
            reqs=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$OUT/clientbench-stat.json")
        fi
        echo "#### perf stat: $t (≈ $reqs requests in the window)"
        echo '```'
        grep -E 'task-clock|context-switches|cpu-migrations|page-faults|seconds time' "$OUT/perf-stat-$t.txt"
        "$PY" - "$OUT/perf-stat-$t.txt" "$reqs" <<'EOF'
import re, sys
txt, n = open(sys.argv[1]).read(), int(sys.argv[2])
for name in ("context-switches", "cpu-migrations", "page-faults"):
    m = re.search(r"([\d,]+)\s+" + name, txt)
    if m and n:
        print(f"  {name} per request: {int(m.group(1).replace(',', '')) / n:.3f}")
m = re.search(r"([\d.,]+) msec task-clock", txt)
if m and n:
    print(f"  CPU per request: {float(m.group(1).replace(',', '')) * 1000 / n:.2f} µs")
EOF
        echo '```'
        echo "#### perf record: $t, top $TOP symbols (self time, cpu-clock samples, all threads)"
        echo '```'
        perf report -i "$OUT/perf-$t.data" --no-children --sort dso,symbol --stdio -q -g none \
            >"$OUT/report-$t.txt" 2>/dev/null || true
        grep -v '^$' "$OUT/report-$t.txt" | sed -n "1,${TOP}p" | demangle | cut -c1-160 | sed -E 's/ +$//'
        echo '```'
        echo "#### by shared object ($t)"
        echo '```'
        perf report -i "$OUT/perf-$t.data" --no-children --sort dso --stdio -q -g none \
            >"$OUT/report-dso-$t.txt" 2>/dev/null || true
        grep -v '^$' "$OUT/report-dso-$t.txt" | sed -n 1,12p | sed -E 's/ +$//'
        echo '```'
        echo "#### by thread ($t; perf calls a thread "pid")"
        echo '```'
        perf report -i "$OUT/perf-$t.data" --no-children --sort pid --stdio -q -g none \
            >"$OUT/report-tid-$t.txt" 2>/dev/null || true
        grep -v '^$' "$OUT/report-tid-$t.txt" | sed -n 1,8p | sed -E 's/ +$//'
        echo '```'
    done
    for target in hello-server nginx-hello; do
        [[ -s "$OUT/strace-$target.txt" ]] || continue
        echo "#### syscalls of $target under wrk -c50 (strace -c, 3 s; per request = calls / response writes)"
        echo '```'
        "$PY" - "$OUT/strace-$target.txt" <<'EOF'
import sys
rows = []
for ln in open(sys.argv[1]):
    f = ln.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        rows.append((f[-1], int(f[3])))
# one response write per request: writev/write/sendmsg/sendto, whichever the server uses
reqs = max((c for n, c in rows if n in ("writev", "write", "sendmsg", "sendto")), default=0)
for name, calls in sorted(rows, key=lambda r: -r[1])[:8]:
    print(f"  {name:16s} {calls:>9d}   {calls / reqs if reqs else 0:.2f} per request")
EOF
        echo '```'
    done
else
    log "perf unusable here: callgrind on hello-server (bounded: wrk -d2s)"
    spawn hello-server "${SRV[@]}" valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
        "$BIN/hello-server" --port "$HELLO_PORT_H" --threads 1
    wait_http "http://$HOST:$HELLO_PORT_H/" 60
    client wrk -t1 -c10 -d2s "http://$HOST:$HELLO_PORT_H/" >"$OUT/wrk-callgrind.txt"
    stop_all
    callgrind_annotate "$OUT/callgrind.out" >"$OUT/callgrind.txt" 2>/dev/null || true
    sed -n "1,$((TOP + 20))p" "$OUT/callgrind.txt" | demangle | cut -c1-200
    "$PY" "$TOOLS/benchlib.py" wrk "$OUT/wrk-callgrind.txt"
fi
