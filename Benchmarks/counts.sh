#!/usr/bin/env bash
# Deterministic per-request counts: instructions and runtime calls per request, under callgrind, for
#   gateway-proxy   moya-gateway, one proxied route (threads 1, access log off, pool 64), GET /json
#   gateway-stub    the same gateway, a stub route (no upstream), GET /stub
#   engine-proxy    hello-server --proxy (HTTPServer + HTTPClient alone: no routing, Moya, plugins or logs)
#   engine-stub     hello-server (the server alone, 13-byte answer)
#   nginx-proxy     nginx proxy_pass, upstream keep-alive 64 (a reference: instructions and mallocs only mean much)
#   nginx-stub      nginx return 200 (a reference)
#   gateway-h2      moya-gateway with a TLS listener and http2 (ALPN h2), the proxied route, GET /json over h2
#   gateway-h2-epoll  the same with `server.io_uring: false` (what a container under the default seccomp profile gets)
#   nginx-h2        nginx `listen ssl http2` + proxy_pass, upstream keep-alive 256 (conf/nginx-counts-tls.conf; the
#                   reference for the two above)
# all in front of one nginx upstream answering a 300-byte JSON (not under valgrind).
#
# The h2 targets are driven by `h2load -n N -c H2_CONNS -m H2_STREAMS https://...` (TLS 1.3, ALPN h2; both sides use
# a self-signed ECDSA P-256 certificate made with the openssl CLI in RUN_DIR). Default -c10 -m10, as Benchmarks/h2.sh
# loads them: a request's cost there includes its share of what several streams in flight share (a TLS record or a
# read carrying several HEADERS frames, one write flushing several responses, one SETTINGS/WINDOW_UPDATE per
# connection), which -c1 -m1 would bill to every request as a read, a write and a wake-up of its own (ask for it with
# H2_CONNS=1 H2_STREAMS=1 when that is the question). The connections and TLS handshakes of a load run cancel out of
# dump(2N) − dump(N) like the HTTP/1.1 ones; N/H2_CONNS and 2N/H2_CONNS must stay at or below 1000 (the gateway and
# nginx end an HTTP/2 connection with GOAWAY after 1000 requests and h2load does not reconnect). How the streams of a
# run interleave depends on timing, so these figures move by a few hundred instructions from run to run, unlike the
# HTTP/1.1 ones (-c1, one request at a time).
#
# Wall-clock and cycle counters are noise on a shared VM (and `perf stat -e instructions` is not supported on this
# one); instruction and call counts are not. For each target, after WARMUP requests (pools filled, caches and lazily
# made metadata ready), the counters are zeroed, N requests run and are dumped (callgrind_control -d), then 2N
# requests run and are dumped: per request = (dump(2N) − dump(N)) / N, so what a run pays once (connections opened
# and closed, the load tool's start) cancels out. The load is h2load --h1 -n N -c CONNS: an exact number of requests.
# Counted over every thread of the process: Ir (instructions executed), and the calls of swift_retain/release,
# swift_bridgeObjectRetain/Release, swift_allocObject, malloc/free, swift_task_switch, swift_task_alloc,
# swift_continuation_resume and swift_beginAccess (tools/callgrind_counts.py).
#
#   Benchmarks/counts.sh                          # prints the table (markdown) on stdout
#   SAVE=Benchmarks/counts-baseline.tsv Benchmarks/counts.sh      # writes the numbers as the new baseline
#   CHECK=Benchmarks/counts-baseline.tsv Benchmarks/counts.sh     # also compares; exit 1 when a count rose
#
# Env: N=1000 WARMUP=300 CONNS=1 TARGETS="gateway-proxy gateway-stub engine-proxy engine-stub nginx-proxy nginx-stub"
#      (the h2 targets run only when named: TARGETS="gateway-h2 gateway-h2-epoll nginx-h2") H2_CONNS=10 H2_STREAMS=10
#      TOLERANCE=0.03 (a count may rise by this fraction, plus 0.5 per request, before CHECK fails)
#      BIN_DIR= (release binaries to measure instead of building: for an A/B against a saved build) SKIP_BUILD=0
#      GW_BIN= (the moya-gateway to measure; default the one in BIN_DIR when given, else the build deploy/ ships:
#      scripts/build-release.sh --static-swift-stdlib, profile-guided)
#      IO_URING=1 (0: the gateway and the engine send with sendmsg) RUN_DIR=/tmp/moyabench-counts BASE_PORT=18400
#      FOOTPRINT=0 (1: callgrind also records costs per instruction, and a second table gives each target's code
#      footprint: the distinct code, in 64-byte cache lines, run at least once per two requests; tools/code_footprint.py)
# Needs valgrind, h2load (nghttp2-client), nginx and a C compiler; installs the first three with apt when root.
# valgrind 3.19 (Debian 12) cannot read the DWARF 5 of a Swift 6.3 binary and writes to the read-only mask that
# libdispatch's sigsuspend passes, so the binaries run as copies without debug info (symbols kept) and with a
# small LD_PRELOAD shim (scripts/valgrind-sigsuspend.c) that passes sigsuspend a copy of its mask.
# Bounded: every load run is h2load -n under timeout; every process is stopped by PID on exit.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
HERE="$ROOT/Benchmarks"
RUN_DIR="${RUN_DIR:-/tmp/moyabench-counts}"
N="${N:-1000}"
WARMUP="${WARMUP:-300}"
CONNS="${CONNS:-1}"
TARGETS="${TARGETS:-gateway-proxy gateway-stub engine-proxy engine-stub nginx-proxy nginx-stub}"
TOLERANCE="${TOLERANCE:-0.03}"
H2_CONNS="${H2_CONNS:-10}"
H2_STREAMS="${H2_STREAMS:-10}"
IO_URING="${IO_URING:-1}"
FOOTPRINT="${FOOTPRINT:-0}"
BASE_PORT="${BASE_PORT:-18400}"
HOST=127.0.0.1
UP_PORT=$BASE_PORT
GW_PORT=$((BASE_PORT + 1))
GW_ADMIN=$((BASE_PORT + 2))
ENGINE_PORT=$((BASE_PORT + 3))
HELLO_PORT=$((BASE_PORT + 4))
NGX_PORT=$((BASE_PORT + 5))
GW_TLS_PORT=$((BASE_PORT + 6))
GW_TLS_ADMIN=$((BASE_PORT + 7))
GW_TLS_PLAIN=$((BASE_PORT + 8))
NGX_TLS_PORT=$((BASE_PORT + 9))
START_TIMEOUT=600   # seconds for a process under valgrind to answer its first request (minutes on a busy VM)

log() { echo "[counts $(date +%H:%M:%S)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ------------------------------------------------------------------ tools
missing=()
command -v valgrind >/dev/null || missing+=(valgrind)
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v nginx >/dev/null || missing+=(nginx-light)
if ((${#missing[@]})); then
    [[ $(id -u) == 0 ]] || die "needed: apt-get install -y ${missing[*]} (as root)"
    log "installing ${missing[*]} (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >&2; }
fi
for tool in valgrind callgrind_control h2load nginx curl objcopy cc python3 ss openssl; do
    command -v "$tool" >/dev/null || die "missing $tool"
done
for port in "$UP_PORT" "$GW_PORT" "$GW_ADMIN" "$ENGINE_PORT" "$HELLO_PORT" "$NGX_PORT" "$GW_TLS_PORT" "$GW_TLS_ADMIN" \
    "$GW_TLS_PLAIN" "$NGX_TLS_PORT"; do
    ! ss -Hltn "sport = :$port" | grep -q . || die "port $port is taken (BASE_PORT= moves them all)"
done

if [[ -z "${BIN_DIR:-}" ]]; then
    if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
        log "building release: hello-server, and the shipped moya-gateway (scripts/build-release.sh --static-swift-stdlib)"
        (cd "$ROOT" && swift build -c release --product hello-server >&2 &&
            scripts/build-release.sh --static-swift-stdlib >/dev/null)
    fi
    BIN_DIR="$(cd "$ROOT" && swift build -c release --show-bin-path)"
    GW_BIN="${GW_BIN:-$("$ROOT/scripts/build-release.sh" --static-swift-stdlib --show-bin-path)}"
fi
GW_BIN="${GW_BIN:-$BIN_DIR/moya-gateway}"
needs_engine=0; [[ " $TARGETS " != *" engine-"* ]] || needs_engine=1
[[ -x "$GW_BIN" ]] || die "missing $GW_BIN"
[[ $needs_engine == 0 || -x "$BIN_DIR/hello-server" ]] || die "missing hello-server in $BIN_DIR"

rm -rf "$RUN_DIR"
mkdir -p "$RUN_DIR/bin" "$RUN_DIR/dumps" "$RUN_DIR/upstream/tmp" "$RUN_DIR/nginx/tmp" "$RUN_DIR/nginx-h2/tmp" \
    "$RUN_DIR/tls" "$RUN_DIR/tmp"
objcopy --strip-debug "$GW_BIN" "$RUN_DIR/bin/moya-gateway"
[[ $needs_engine == 0 ]] || objcopy --strip-debug "$BIN_DIR/hello-server" "$RUN_DIR/bin/hello-server"
# valgrind 3.19's rt_sigsuspend wrapper edits the caller's mask in place; libdispatch passes a read-only one.
cc -O2 -shared -fPIC -o "$RUN_DIR/sigsuspend_shim.so" "$ROOT/scripts/valgrind-sigsuspend.c"

# ------------------------------------------------------------------ processes
# shellcheck source=tools/child-processes.sh
source "$HERE/tools/child-processes.sh"

render_nginx() {   # render_nginx TEMPLATE DIR
    sed -e "s|@RUN@|$2|g" -e "s|@UP_PORT@|$UP_PORT|g" -e "s|@NGX_PORT@|$NGX_PORT|g" \
        -e "s|@NGX_TLS_PORT@|$NGX_TLS_PORT|g" -e "s|@TLS@|$RUN_DIR/tls|g" "$HERE/conf/$1" >"$2/nginx.conf"
}

wait_answer() {   # wait_answer URL PID
    local deadline=$((SECONDS + START_TIMEOUT))
    until curl -skf -o /dev/null "$1"; do
        kill -0 "$2" 2>/dev/null || die "the process for $1 ended (see $RUN_DIR/*.log)"
        ((SECONDS < deadline)) || die "no answer from $1 within ${START_TIMEOUT}s"
        sleep 1
    done
}

CALLGRIND=(valgrind --tool=callgrind "--dump-instr=$([[ $FOOTPRINT == 1 ]] && echo yes || echo no)" --collect-systime=no)

start_valgrind() {   # start_valgrind NAME ARGS... -> VG_PID
    local name=$1; shift
    LD_PRELOAD="$RUN_DIR/sigsuspend_shim.so" "${CALLGRIND[@]}" \
        --callgrind-out-file="$RUN_DIR/dumps/$name.%p" "$@" >"$RUN_DIR/$name.log" 2>&1 &
    VG_PID=$!
    PIDS+=("$VG_PID")
}

stop() {   # stop PID
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

load() {   # load URL REQUESTS (https:// URLs: h2 over TLS, -c H2_CONNS -m H2_STREAMS)
    local out args=(--h1 -c "$CONNS")
    [[ $1 != https://* ]] || args=(-c "$H2_CONNS" -m "$H2_STREAMS")
    out=$(timeout -k 5 900 h2load "${args[@]}" -n "$2" "$1" 2>&1) || die "h2load failed against $1: $out"
    grep -q "requests: $2 total, $2 started, $2 done, $2 succeeded" <<<"$out" \
        || die "not every request succeeded against $1: $(grep -E 'requests:|status codes:' <<<"$out")"
}

# measure NAME PID URL: zero, N requests, dump, 2N requests, dump; appends "NAME Ir calls..." per request to RESULTS
measure() {
    local name=$1 pid=$2 url=$3 dumps
    log "$name: $WARMUP warm-up requests, then $N and $((2 * N))"
    load "$url" "$WARMUP"
    callgrind_control -z "$pid" >/dev/null
    load "$url" "$N"
    callgrind_control --dump="$name-n" "$pid" >/dev/null
    load "$url" $((2 * N))
    callgrind_control --dump="$name-2n" "$pid" >/dev/null
    sleep 1
    dumps=("$RUN_DIR/dumps/"*".$pid."*)
    ((${#dumps[@]} >= 2)) || die "callgrind wrote no dumps for $name"
    python3 "$HERE/tools/callgrind_counts.py" --per-request "$N" --name "$name" \
        "$(ls -v "${dumps[@]}" | tail -n 2 | head -n 1)" "$(ls -v "${dumps[@]}" | tail -n 1)" >>"$RESULTS"
    if [[ $FOOTPRINT == 1 ]]; then
        # The last dump holds the 2N requests alone (a dump zeroes the counters).
        python3 "$HERE/tools/code_footprint.py" "$(ls -v "${dumps[@]}" | tail -n 1)" $((2 * N)) --name "$name" \
            >"$RUN_DIR/footprint-$name.txt"
    fi
}

RESULTS="$RUN_DIR/results.tsv"
: >"$RESULTS"

render_nginx nginx-counts-upstream.conf "$RUN_DIR/upstream"
nginx -p "$RUN_DIR/upstream" -c "$RUN_DIR/upstream/nginx.conf" -e "$RUN_DIR/upstream/error.log" \
    >"$RUN_DIR/upstream.log" 2>&1 &
PIDS+=($!)
UP_PID=$!
wait_answer "http://$HOST:$UP_PORT/json" "$UP_PID"

uring_flag=(); [[ "$IO_URING" == 1 ]] || uring_flag=(--no-io-uring)
wants() { [[ " $TARGETS " == *" $1 "* ]]; }

if wants gateway-proxy || wants gateway-stub; then
    cat >"$RUN_DIR/gateway.yaml" <<YAML
server: { listen: ["$HOST:$GW_PORT"], threads: 1, http2: false, io_uring: $([[ "$IO_URING" == 1 ]] && echo true || echo false) }
admin: { listen: "$HOST:$GW_ADMIN" }
logging: { access_log: false }
upstreams:
  bench: { base_url: "http://$HOST:$UP_PORT", pool: { max_connections: 64 } }
  canned: { stub: { status: 200, headers: { Content-Type: application/json }, body: '{"id":12345,"status":"ok"}' } }
routes:
  - { name: json, match: { path: /json }, upstream: bench }
  - { name: stub, match: { path: /stub }, upstream: canned }
YAML
    log "starting moya-gateway under callgrind (a minute or more)"
    start_valgrind gateway "$RUN_DIR/bin/moya-gateway" serve --config "$RUN_DIR/gateway.yaml"
    wait_answer "http://$HOST:$GW_ADMIN/readyz" "$VG_PID"
    if wants gateway-proxy; then measure gateway-proxy "$VG_PID" "http://$HOST:$GW_PORT/json"; fi
    if wants gateway-stub; then measure gateway-stub "$VG_PID" "http://$HOST:$GW_PORT/stub"; fi
    stop "$VG_PID"
fi
if wants gateway-h2 || wants gateway-h2-epoll || wants nginx-h2; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$RUN_DIR/tls/key.pem" -out "$RUN_DIR/tls/cert.pem" 2>/dev/null
fi
for target in gateway-h2 gateway-h2-epoll; do
    wants "$target" || continue
    uring=true; [[ $target == gateway-h2 ]] || uring=false
    cat >"$RUN_DIR/$target.yaml" <<YAML
server:
  listen: ["$HOST:$GW_TLS_PLAIN"]
  threads: 1
  http2: true
  io_uring: $uring
  tls: { listen: ["$HOST:$GW_TLS_PORT"], certificate: "$RUN_DIR/tls/cert.pem", private_key: "$RUN_DIR/tls/key.pem" }
  buffering: { temp_dir: "$RUN_DIR/tmp" }
admin: { listen: "$HOST:$GW_TLS_ADMIN" }
logging: { access_log: false }
upstreams:
  bench: { base_url: "http://$HOST:$UP_PORT", pool: { max_connections: 64 } }
routes:
  - { name: json, match: { path: /json }, upstream: bench }
YAML
    log "starting moya-gateway (TLS, h2, io_uring $uring) under callgrind"
    start_valgrind "$target" "$RUN_DIR/bin/moya-gateway" serve --config "$RUN_DIR/$target.yaml"
    wait_answer "http://$HOST:$GW_TLS_ADMIN/readyz" "$VG_PID"
    measure "$target" "$VG_PID" "https://$HOST:$GW_TLS_PORT/json"
    stop "$VG_PID"
done
if wants engine-proxy; then
    log "starting hello-server --proxy under callgrind"
    start_valgrind engine-proxy "$RUN_DIR/bin/hello-server" --port "$ENGINE_PORT" --threads 1 "${uring_flag[@]}" \
        --proxy "http://$HOST:$UP_PORT/json"
    wait_answer "http://$HOST:$ENGINE_PORT/json" "$VG_PID"
    measure engine-proxy "$VG_PID" "http://$HOST:$ENGINE_PORT/json"
    stop "$VG_PID"
fi
if wants engine-stub; then
    log "starting hello-server under callgrind"
    start_valgrind engine-stub "$RUN_DIR/bin/hello-server" --port "$HELLO_PORT" --threads 1 "${uring_flag[@]}"
    wait_answer "http://$HOST:$HELLO_PORT/" "$VG_PID"
    measure engine-stub "$VG_PID" "http://$HOST:$HELLO_PORT/"
    stop "$VG_PID"
fi
if wants nginx-proxy || wants nginx-stub; then
    render_nginx nginx-counts-proxy.conf "$RUN_DIR/nginx"
    log "starting nginx (one process, no master) under callgrind"
    start_valgrind nginx nginx -p "$RUN_DIR/nginx" -c "$RUN_DIR/nginx/nginx.conf" -e "$RUN_DIR/nginx/error.log"
    wait_answer "http://$HOST:$NGX_PORT/json" "$VG_PID"
    if wants nginx-proxy; then measure nginx-proxy "$VG_PID" "http://$HOST:$NGX_PORT/json"; fi
    if wants nginx-stub; then measure nginx-stub "$VG_PID" "http://$HOST:$NGX_PORT/hello"; fi
    stop "$VG_PID"
fi
if wants nginx-h2; then
    render_nginx nginx-counts-tls.conf "$RUN_DIR/nginx-h2"
    log "starting nginx (TLS, h2; one process, no master) under callgrind"
    start_valgrind nginx-h2 nginx -p "$RUN_DIR/nginx-h2" -c "$RUN_DIR/nginx-h2/nginx.conf" \
        -e "$RUN_DIR/nginx-h2/error.log"
    wait_answer "https://$HOST:$NGX_TLS_PORT/json" "$VG_PID"
    measure nginx-h2 "$VG_PID" "https://$HOST:$NGX_TLS_PORT/json"
    stop "$VG_PID"
fi

{
    h2_note=""; [[ " $TARGETS " != *-h2* ]] || h2_note=" (h2 targets: -c $H2_CONNS -m $H2_STREAMS over TLS)"
    echo "conditions: N=$N (and 2N) after $WARMUP warm-up requests, h2load --h1 -c $CONNS$h2_note, io_uring=$IO_URING," \
        "$(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD)), $(valgrind --version)"
    echo
    python3 "$HERE/tools/callgrind_counts.py" --table "$RESULTS"
    if [[ $FOOTPRINT == 1 ]]; then
        echo
        echo "| target | code run per request: 64-byte lines | KiB | distinct instructions |"
        echo "|---|---:|---:|---:|"
        for file in "$RUN_DIR"/footprint-*.txt; do
            head -n 1 "$file" | awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
        done
        echo
        echo "(by object and module: $RUN_DIR/footprint-*.txt)"
    fi
} | tee "$RUN_DIR/table.md"

if [[ -n "${SAVE:-}" ]]; then
    { echo "# Benchmarks/counts.sh, per request: target, then $(python3 "$HERE/tools/callgrind_counts.py" --columns)"
      echo "# $(head -n 1 "$RUN_DIR/table.md")"
      cat "$RESULTS"; } >"$SAVE"
    log "baseline written to $SAVE"
fi
if [[ -n "${CHECK:-}" ]]; then
    python3 "$HERE/tools/callgrind_counts.py" --check "$CHECK" --tolerance "$TOLERANCE" "$RESULTS"
fi
