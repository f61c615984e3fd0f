#!/usr/bin/env bash
# The Moya layer's cost per request: MoyaBench (release) against nginx `return 200` ("Hello, World!"), nginx pinned
# to CPU 1 and MoyaBench to CPU 0, through Benchmarks/common.sh (start_nginx, spawn, cleanup on EXIT).
# Runs every mode REPS times in turn and prints each run's JSON lines plus the medians per mode.
#
# Env: REPS=3 DURATION=3 CONNS=50 MAX_REQUESTS=2000000 NGX_PORT_MB=18380 SKIP_BUILD=0 RUN_DIR=/tmp/moyabench-moya
# Bounded: every run is capped by --duration and --max-requests and runs under `timeout`.
set -euo pipefail
export RUN_DIR="${RUN_DIR:-/tmp/moyabench-moya}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

REPS="${REPS:-3}"
DURATION="${DURATION:-3}"
CONNS="${CONNS:-50}"
MAX_REQUESTS="${MAX_REQUESTS:-2000000}"
need nginx taskset curl ss swift "$PY"
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    (cd "$ROOT" && swift build -c release --product MoyaBench >&2)
fi
BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)/MoyaBench"
[[ -x "$BIN" ]] || die "MoyaBench is not built"

free_port() {
    local p=$1
    while ss -Hltn "sport = :$p" | grep -q .; do p=$((p + 1)); ((p < $1 + 100)) || die "no free port"; done
    echo "$p"
}
install_traps
PORT=$(free_port "${NGX_PORT_MB:-18380}")
mkdir -p "$RUN_DIR/conf" "$RESULTS_DIR"
sed "s/@PORT@/$PORT/g" "$ROOT/Benchmarks/conf/nginx-hello.conf" >"$RUN_DIR/conf/nginx-hello.conf"
CONF="$RUN_DIR/conf" start_nginx nginx-hello nginx-hello.conf "http://$HOST:$PORT/"

OUT="$RESULTS_DIR/moyabench.jsonl"
: >"$OUT"
echo "conditions: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, conns=$CONNS duration=${DURATION}s reps=$REPS"
for rep in $(seq 1 "$REPS"); do
    log "MoyaBench rep $rep/$REPS"
    "${CLI[@]}" timeout -k 5 $((8 * (DURATION + 2) + 30)) "$BIN" --url "http://$HOST:$PORT/" --connections "$CONNS" \
        --duration "$DURATION" --warmup 1 --max-requests "$MAX_REQUESTS" | tee -a "$OUT"
done
"$PY" - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
modes = []
for r in rows:
    if r["mode"] not in modes: modes.append(r["mode"])
print("| mode | req/s (median) | CPU µs/request (median) | Moya adds (median) |")
print("|---|---:|---:|---:|")
for m in modes:
    runs = [r for r in rows if r["mode"] == m and "rps" in r]
    extra = [r["moya_adds_cpu_percent"] for r in rows if r["mode"] == m and "moya_adds_cpu_percent" in r]
    rps = statistics.median(r["rps"] for r in runs) if runs else 0
    cpu = statistics.median(r["cpu_us_per_req"] for r in runs) if runs else 0
    print(f"| {m} | {rps:,.0f} | {cpu:.2f} | {(f'{statistics.median(extra):+.1f} %' if extra else '—')} |")
PY
