#!/usr/bin/env bash
# MoyaGateway's engine and client against nginx and wrk, with the benchmarks' own harness (Benchmarks/common.sh).
#
#   1. server: wrk -t1 -c50 -d5s --latency against nginx `return 200 "Hello, World!"` and against our
#      hello-server (1 thread); req/s, p50/p99, server CPU µs per request, ratio hello-server/nginx.
#   2. client: Benchmarks/ClientBench (our HTTPClient, 50 keep-alive connections, 5 s) against the same nginx,
#      compared with the wrk run of the same repetition (ratio ours/wrk); also ClientBench -> hello-server.
#   3. memory: RSS idle, and with 1000 idle keep-alive connections (tools/idle_conns.py, benchlib.py rss),
#      for hello-server and nginx, measured on freshly started servers before any load.
#
# Servers on CPU $SERVER_CPU (taskset -c 1), load generators on CPU $CLIENT_CPU (taskset -c 0); REPS interleaved
# repetitions (nginx, hello-server, then the client runs, in turn); medians. All on 127.0.0.1; every process is
# started through common.sh's spawn/client_bg and stopped by PID on EXIT; every load run is bounded (wrk -d,
# ClientBench --duration/--max-requests, idle_conns.py --hold, all under `timeout -k 5 $CLIENT_TIMEOUT`).
#
# Env: REPS=3 DURATION=5 CONNS=50 N=1000 HOLD=8 SKIP_BUILD=0 SKIP_MEMORY=0 RUN_DIR=/tmp/moyabench
#      NGX_HELLO_PORT=18180 HELLO_PORT=18181 (the first free port from there up is used)
#      QUIET_PCT=5 QUIET_MAX_WAIT=30 GUARD_RETRIES=1 (common.sh)
# Output: progress on stderr, a markdown table on stdout; raw files under $RUN_DIR/results/moya/.
set -euo pipefail

export RUN_DIR="${RUN_DIR:-/tmp/moyabench}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-5}"          # seconds, for wrk -d and ClientBench --duration
CONNS="${CONNS:-50}"
N="${N:-1000}"
HOLD="${HOLD:-8}"
SKIP_BUILD="${SKIP_BUILD:-0}"
SKIP_MEMORY="${SKIP_MEMORY:-0}"
OUT="$RESULTS_DIR/moya"

# ------------------------------------------------------------------ tools
need wrk nginx taskset curl ss swift "$PY"

if [[ "$SKIP_BUILD" != 1 ]]; then
    log "building release: hello-server, ClientBench"
    (cd "$ROOT" && swift build -c release --product hello-server >&2 && swift build -c release --product ClientBench >&2)
fi
BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)"
HELLO_BIN="$BIN/hello-server"
CB_BIN="$BIN/ClientBench"
[[ -x "$HELLO_BIN" && -x "$CB_BIN" ]] || die "missing $HELLO_BIN or $CB_BIN (build failed?)"

# first port from $1 up that nobody listens on
free_port() {
    local p=$1
    while ss -Hltn "sport = :$p" | grep -q .; do
        p=$((p + 1))
        ((p < $1 + 100)) || die "no free port in $1..$p"
    done
    echo "$p"
}

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # idle_conns.py and the servers need N+ fds
install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT"
record_env "$OUT"
{
    echo "swift: $(swift --version 2>&1 | head -1)"
    echo "commit: $(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD))"
    echo "cpu_model: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
    echo "load: wrk -t1 -c$CONNS -d${DURATION}s --latency; ClientBench --connections $CONNS --duration $DURATION; reps=$REPS"
} >>"$OUT/conditions.txt"

NGX_HELLO_PORT=$(free_port "${NGX_HELLO_PORT:-18180}")
HELLO_PORT=$(free_port "${HELLO_PORT:-18181}")
((HELLO_PORT != NGX_HELLO_PORT)) || HELLO_PORT=$(free_port $((NGX_HELLO_PORT + 1)))

# nginx from apt, own config + prefix under $RUN_DIR, through common.sh's start_nginx (render + spawn + wait)
mkdir -p "$RUN_DIR/conf"
sed "s/@PORT@/$NGX_HELLO_PORT/g" "$HERE/conf/nginx-hello.conf" >"$RUN_DIR/conf/nginx-hello.conf"
log "starting nginx (:$NGX_HELLO_PORT) and hello-server (:$HELLO_PORT), pinned to CPU $SERVER_CPU"
CONF="$RUN_DIR/conf" start_nginx nginx-hello nginx-hello.conf "http://$HOST:$NGX_HELLO_PORT/"
spawn hello-server "${SRV[@]}" "$HELLO_BIN" --port "$HELLO_PORT" --threads 1
wait_http "http://$HOST:$HELLO_PORT/"

declare -A PORT=([nginx]=$NGX_HELLO_PORT [hello-server]=$HELLO_PORT)
declare -A SPID=([nginx]=$(pid_of nginx-hello) [hello-server]=$(pid_of hello-server))
[[ "$(curl -s "http://$HOST:$NGX_HELLO_PORT/")" == "Hello, World!" ]] || die "nginx does not answer Hello, World!"
[[ "$(curl -s "http://$HOST:$HELLO_PORT/")" == "Hello, World!" ]] || die "hello-server does not answer Hello, World!"

server_alive() {   # fail loudly if a server died under load
    local s
    for s in nginx hello-server; do
        _alive "${SPID[$s]}" || { tail -n 30 "$RUN_DIR/logs/$s.log" "$RUN_DIR/logs/nginx-hello.log" >&2 || true
                                  die "$s (pid ${SPID[$s]}) is gone; log above"; }
    done
}

# ------------------------------------------------------------------ 3. memory (fresh servers, before any load)
if [[ "$SKIP_MEMORY" != 1 ]]; then
    for s in nginx hello-server; do
        pid=${SPID[$s]}; port=${PORT[$s]}; d="$OUT/memory/$s"; mkdir -p "$d"
        curl -sf -o /dev/null "http://$HOST:$port/"
        sleep 2
        "$PY" "$TOOLS/benchlib.py" rss "$pid" >"$d/idle.json"
        rm -f "$d/ready"
        CLIENT_TIMEOUT=$((HOLD + 60)) client_bg "$PY" "$TOOLS/idle_conns.py" --port "$port" --path / -n "$N" \
            --hold "$HOLD" --ready-file "$d/ready" >"$d/client.json" 2>"$d/client.err"
        cpid=$CLIENT_PID
        end=$((SECONDS + 60))
        until [[ -s "$d/ready" ]]; do
            _alive "$cpid" || { cat "$d/client.err" >&2; die "idle_conns.py for $s exited early"; }
            ((SECONDS < end)) || die "idle_conns.py for $s: not ready after 60 s"
            sleep 0.1
        done
        sleep 2
        "$PY" "$TOOLS/benchlib.py" rss "$pid" >"$d/conns.json"
        ss -Htn state established "( sport = :$port )" | wc -l >"$d/established"
        wait "$cpid" || die "idle_conns.py for $s failed: $(cat "$d/client.err")"
        sleep 2
        "$PY" "$TOOLS/benchlib.py" rss "$pid" >"$d/after.json"
        log "memory $s: idle $(grep -o '"rss_kb": [0-9]*' "$d/idle.json" | head -1), with $N conns" \
            "$(grep -o '"rss_kb": [0-9]*' "$d/conns.json" | head -1), established=$(cat "$d/established")," \
            "client=$(cat "$d/client.json")"
    done
    server_alive
fi

# ------------------------------------------------------------------ 1 + 2. throughput, interleaved
run_wrk() {   # run_wrk TARGET REP
    local t=$1 rep=$2 f="$OUT/tp/wrk_${1}_r${2}.txt" s0 s1 p0 p1 attempt
    for attempt in $(seq $((GUARD_RETRIES + 1))); do
        guard_begin
        p0=$(cpu_ticks "${SPID[$t]}"); s0=$(percpu_snap)
        client "$PY" "$HERE/tools/rusage.py" "${f%.txt}.rusage" \
            wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "http://$HOST:${PORT[$t]}/" >"$f"
        s1=$(percpu_snap); p1=$(cpu_ticks "${SPID[$t]}")
        guard_end && break
        log "rep $rep wrk->$t: other processes took ${FOREIGN_PCT}% of a CPU during the run (try $attempt)"
    done
    echo "clk_tck=$CLK_TCK server_ticks=$((p1 - p0)) $(percpu_busy "$s0" "$s1") foreign_pct=$FOREIGN_PCT" >"${f%.txt}.cpu"
    log "rep $rep wrk->$t: $("$PY" "$TOOLS/benchlib.py" wrk "$f") server_ticks=$((p1 - p0)) foreign=${FOREIGN_PCT}%"
}

run_cb() {    # run_cb TARGET REP : our client against TARGET
    local t=$1 rep=$2 f="$OUT/tp/cb_${1}_r${2}.json" s0 s1 p0 p1 attempt
    for attempt in $(seq $((GUARD_RETRIES + 1))); do
        guard_begin
        p0=$(cpu_ticks "${SPID[$t]}"); s0=$(percpu_snap)
        client "$CB_BIN" --url "http://$HOST:${PORT[$t]}/" --connections "$CONNS" --duration "$DURATION" \
            --warmup 0 >"$f" 2>"${f%.json}.err" || { cat "${f%.json}.err" >&2; die "ClientBench -> $t failed"; }
        s1=$(percpu_snap); p1=$(cpu_ticks "${SPID[$t]}")
        guard_end && break
        log "rep $rep ClientBench->$t: other processes took ${FOREIGN_PCT}% of a CPU during the run (try $attempt)"
    done
    echo "clk_tck=$CLK_TCK server_ticks=$((p1 - p0)) $(percpu_busy "$s0" "$s1") foreign_pct=$FOREIGN_PCT" >"${f%.json}.cpu"
    log "rep $rep ClientBench->$t: $(cat "$f") foreign=${FOREIGN_PCT}%"
}

mkdir -p "$OUT/tp"
log "warm-up (discarded): 1 s of wrk and of ClientBench against each server"
for t in nginx hello-server; do
    client wrk -t1 -c"$CONNS" -d1s "http://$HOST:${PORT[$t]}/" >/dev/null
    client "$CB_BIN" --url "http://$HOST:${PORT[$t]}/" --connections "$CONNS" --duration 1 --warmup 0 >/dev/null 2>&1
done
for rep in $(seq "$REPS"); do
    run_wrk nginx "$rep"
    run_wrk hello-server "$rep"
    run_cb nginx "$rep"
    run_cb hello-server "$rep"
    server_alive
done
for s in nginx hello-server; do "$PY" "$TOOLS/benchlib.py" rss "${SPID[$s]}" >"$OUT/tp/rss_after_load_$s.json"; done

stop_all
QUIET_PCT="$QUIET_PCT" "$PY" "$HERE/tools/summarize.py" "$OUT" "$TOOLS" | tee "$OUT/summary.md"
