#!/usr/bin/env bash
# Idle memory of moya-gateway on the shipped configuration (Configuration/gateway.yaml, its listen ports moved and
# `server.threads: THREADS`, the access log to /dev/null) and of the engine's hello-server, and where it goes:
#   - RSS 2 s after one request ("idle"), then with N idle keep-alive connections (one GET each, held HOLD s):
#     Δ RSS per connection = (RSS with N − idle RSS) / N;
#   - the idle RSS split from /proc/PID/smaps: anonymous memory (heap, malloc arenas, thread stacks, the libraries'
#     relocated data) and file-backed pages (the code and read-only data of the binary and of each shared library
#     the process touched; the kernel maps 64 KiB around each page fault), the largest mappings by name, threads;
#   - the gateway binary's own resident pages by ELF section and its code pages by module (tools/binary_residency.py).
# Each binary runs alone, freshly started, with nothing else asked of it.
#
#   Benchmarks/memory.sh                       # release build of this tree (swift build -c release)
#   GW_BIN=/path/moya-gateway HELLO_BIN=/path/hello-server Benchmarks/memory.sh   # other builds (an A/B, or the
#                                              # --static-swift-stdlib build that deploy/ ships)
# Env: THREADS=2 N=1000 HOLD=8 SKIP_BUILD=0 RUN_DIR=/tmp/moyabench-memory BASE_PORT=18440 TOP=12
#      GW_ENV="GLIBC_TUNABLES=glibc.malloc.tcache_count=64 GNUTLS_NO_IMPLICIT_INIT=1" (the gateway's environment: what
#      the shipped image and systemd unit set; GW_ENV= measures it without)
# Bounded: idle_keepalive.py holds for HOLD s and exits; every process is stopped by PID on exit.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
HERE="$ROOT/Benchmarks"
RUN_DIR="${RUN_DIR:-/tmp/moyabench-memory}"
THREADS="${THREADS:-2}"
N="${N:-1000}"
HOLD="${HOLD:-8}"
TOP="${TOP:-12}"
GW_ENV="${GW_ENV-GLIBC_TUNABLES=glibc.malloc.tcache_count=64 GNUTLS_NO_IMPLICIT_INIT=1}"
BASE_PORT="${BASE_PORT:-18440}"
GW_PORT=$BASE_PORT
GW_ADMIN=$((BASE_PORT + 1))
HELLO_PORT=$((BASE_PORT + 2))

log() { echo "[memory $(date +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for tool in curl python3 ss; do command -v "$tool" >/dev/null || die "missing $tool"; done
for port in "$GW_PORT" "$GW_ADMIN" "$HELLO_PORT"; do
    ! ss -Hltn "sport = :$port" | grep -q . || die "port $port is taken (BASE_PORT= moves them all)"
done

if [[ -z "${GW_BIN:-}" || -z "${HELLO_BIN:-}" ]]; then
    if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
        log "building release: hello-server, and the shipped moya-gateway (scripts/build-release.sh --static-swift-stdlib)"
        (cd "$ROOT" && swift build -c release --product hello-server >&2)
        [[ -n "${GW_BIN:-}" ]] || (cd "$ROOT" && scripts/build-release.sh --static-swift-stdlib >/dev/null)
    fi
    BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)"
    GW_BIN="${GW_BIN:-$("$ROOT/scripts/build-release.sh" --static-swift-stdlib --show-bin-path)}"
    HELLO_BIN="${HELLO_BIN:-$BIN/hello-server}"
fi
[[ -x "$GW_BIN" && -x "$HELLO_BIN" ]] || die "missing $GW_BIN or $HELLO_BIN"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

rm -rf "$RUN_DIR"
mkdir -p "$RUN_DIR/config"
cp -R "$ROOT/Configuration/." "$RUN_DIR/config/"
sed -i -e "s|127.0.0.1:8080|127.0.0.1:$GW_PORT|" -e "s|127.0.0.1:9090|127.0.0.1:$GW_ADMIN|" \
    -e "s|^  threads: .*|  threads: $THREADS|" "$RUN_DIR/config/gateway.yaml"
grep -q "^  threads: $THREADS" "$RUN_DIR/config/gateway.yaml" || die "could not set server.threads in the copy"

# shellcheck source=tools/child-processes.sh
source "$HERE/tools/child-processes.sh"

wait_answer() {   # wait_answer URL PID
    local deadline=$((SECONDS + 30))
    until curl -sf -o /dev/null "$1"; do
        kill -0 "$2" 2>/dev/null || die "the process for $1 ended (see $RUN_DIR/*.log)"
        ((SECONDS < deadline)) || die "no answer from $1 within 30 s"
        sleep 0.2
    done
}

rss_kib() { awk '/^Rss:/ {print $2}' "/proc/$1/smaps_rollup"; }

# measure NAME PID URL PORT PATH: idle RSS, the breakdown, then RSS with N idle connections; one TSV line to RESULTS
measure() {
    local name=$1 pid=$2 url=$3 port=$4 path=$5 idle loaded holder threads
    curl -sf -o /dev/null "$url" || die "$name: $url failed"
    sleep 2
    idle=$(rss_kib "$pid")
    threads=$(ls "/proc/$pid/task" | wc -l)
    python3 "$HERE/tools/smaps_breakdown.py" --pid "$pid" --top "$TOP" --name "$name" >"$RUN_DIR/$name-breakdown.md"
    if [[ $name == gateway ]]; then
        python3 "$HERE/tools/binary_residency.py" --pid "$pid" --top "$TOP" >"$RUN_DIR/$name-residency.md"
    fi
    python3 "$HERE/tools/idle_keepalive.py" --port "$port" --path "$path" --count "$N" --hold "$HOLD" \
        >"$RUN_DIR/$name-holder.out" 2>"$RUN_DIR/$name-holder.err" &
    holder=$!
    PIDS+=("$holder")
    local deadline=$((SECONDS + 120))
    until grep -q '^ready' "$RUN_DIR/$name-holder.out" 2>/dev/null; do
        kill -0 "$holder" 2>/dev/null || die "$name: idle_keepalive.py failed: $(cat "$RUN_DIR/$name-holder.err")"
        ((SECONDS < deadline)) || die "$name: $N connections not open within 120 s"
        sleep 0.2
    done
    sleep 2
    loaded=$(rss_kib "$pid")
    wait "$holder" || true
    printf '%s\t%s\t%s\t%s\n' "$name" "$idle" "$loaded" "$threads" >>"$RESULTS"
}

RESULTS="$RUN_DIR/results.tsv"
: >"$RESULTS"

log "moya-gateway (threads: $THREADS): $GW_BIN"
# shellcheck disable=SC2086 # GW_ENV is a list of NAME=value words
env $GW_ENV "$GW_BIN" serve --config "$RUN_DIR/config/gateway.yaml" >/dev/null 2>"$RUN_DIR/gateway.log" &
GW_PID=$!
PIDS+=("$GW_PID")
wait_answer "http://127.0.0.1:$GW_ADMIN/readyz" "$GW_PID"
measure gateway "$GW_PID" "http://127.0.0.1:$GW_PORT/api/catalog" "$GW_PORT" /api/catalog
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null || true

log "hello-server --threads $THREADS: $HELLO_BIN"
"$HELLO_BIN" --port "$HELLO_PORT" --threads "$THREADS" >/dev/null 2>"$RUN_DIR/hello.log" &
HELLO_PID=$!
PIDS+=("$HELLO_PID")
wait_answer "http://127.0.0.1:$HELLO_PORT/" "$HELLO_PID"
measure hello-server "$HELLO_PID" "http://127.0.0.1:$HELLO_PORT/" "$HELLO_PORT" /
kill "$HELLO_PID"; wait "$HELLO_PID" 2>/dev/null || true

{
    echo "conditions: threads $THREADS, $N idle keep-alive connections held $HOLD s, the gateway's environment" \
        "'${GW_ENV}'," \
        "$(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD)), $(uname -r)"
    echo
    echo "| process | idle RSS MiB | RSS with $N idle connections MiB | KiB per idle connection | threads |"
    echo "|---|---:|---:|---:|---:|"
    awk -F'\t' -v n="$N" '{ printf "| %s | %.1f | %.1f | %.1f | %d |\n", $1, $2 / 1024, $3 / 1024, ($3 - $2) / n, $4 }' \
        "$RESULTS"
    echo
    cat "$RUN_DIR/gateway-breakdown.md"
    echo
    cat "$RUN_DIR/gateway-residency.md"
    echo
    cat "$RUN_DIR/hello-server-breakdown.md"
} | tee "$RUN_DIR/table.md"
