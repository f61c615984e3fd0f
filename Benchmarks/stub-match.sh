#!/usr/bin/env bash
# The cost of stub matching and templating (issue 39's goal): requests/s of a stub upstream with 50 responses answering
# a request that matches the 50th with a templated body, against a single-response stub giving the same bytes, in the
# same run. Needs only the repository, wrk and taskset.
#
#   single  stub: { status: 200, headers: { Content-Type: application/json }, body: '{"id": "7", "name": "Ada"}' }
#   fifty   49 responses that do not match GET /users/7 (exact paths, prefixes, templates of other shapes, the same
#           template for other methods, for a header the request lacks, for a query it lacks), then
#           { match: { methods: [GET], path_params: "/users/{id}" }, body: '{"id": "{{path.id}}", "name": "Ada"}' }
#
# Both gateways (release build, one event loop, access log off, HTTP/1.1) run pinned to SERVER_CPU; wrk (-t1
# -c$CONNECTIONS, $DURATION s, GET /users/7, keep-alive) to CLIENT_CPU. Repetitions are interleaved (single, fifty,
# then fifty, single, ...) so that a noisy moment of a shared machine hits both; the table gives medians and min-max.
# Knobs: DURATION (5), REPS (5), CONNECTIONS (50), SERVER_CPU (1), CLIENT_CPU (0), SKIP_BUILD=1, RUN_DIR
# (/tmp/moyabench-stub-match), BASE_PORT (18310: uses BASE_PORT..BASE_PORT+3). Every process it starts is stopped by
# PID on exit.
set -euo pipefail
ROOT="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
DURATION="${DURATION:-5}"
REPS="${REPS:-5}"
CONNECTIONS="${CONNECTIONS:-50}"
SERVER_CPU="${SERVER_CPU:-1}"
CLIENT_CPU="${CLIENT_CPU:-0}"
RUN_DIR="${RUN_DIR:-/tmp/moyabench-stub-match}"
BASE_PORT="${BASE_PORT:-18310}"
SINGLE_PORT=$BASE_PORT; SINGLE_ADMIN=$((BASE_PORT + 1)); FIFTY_PORT=$((BASE_PORT + 2)); FIFTY_ADMIN=$((BASE_PORT + 3))

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
command -v wrk >/dev/null || die "wrk is missing (apt-get install -y wrk)"
command -v taskset >/dev/null || die "taskset is missing (util-linux)"
for port in $SINGLE_PORT $SINGLE_ADMIN $FIFTY_PORT $FIFTY_ADMIN; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port is taken (set BASE_PORT)"; fi
done

mkdir -p "$RUN_DIR"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]:-}"; do [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]:-}"; do [[ -n "$pid" ]] && wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    log "building release: GatewayBench, and the shipped moya-gateway (scripts/build-release.sh --static-swift-stdlib)"
    (cd "$ROOT" && swift build -c release --product GatewayBench >&2 &&
        scripts/build-release.sh --static-swift-stdlib >/dev/null)
fi
BIN_DIR="$(cd "$ROOT" && swift build -c release --show-bin-path)"
GW_BIN="${GW_BIN:-$("$ROOT/scripts/build-release.sh" --static-swift-stdlib --show-bin-path)}"
BENCH_BIN="$BIN_DIR/GatewayBench"
[[ -x "$GW_BIN" ]] || die "missing $GW_BIN"

common() {  # common PORT ADMIN
    cat <<YAML
server: { listen: ["127.0.0.1:$1"], threads: 1, http2: false }
admin: { listen: "127.0.0.1:$2" }
logging: { access_log: false }
YAML
}
{
    common "$SINGLE_PORT" "$SINGLE_ADMIN"
    cat <<'YAML'
upstreams:
  users:
    stub: { status: 200, headers: { Content-Type: application/json }, body: '{"id": "7", "name": "Ada"}' }
routes:
  - { name: users, match: { path_prefix: /users }, upstream: users }
YAML
} >"$RUN_DIR/single.yaml"
{
    common "$FIFTY_PORT" "$FIFTY_ADMIN"
    echo "upstreams:"
    echo "  users:"
    echo "    stub:"
    echo "      headers: { Content-Type: application/json }"
    echo "      responses:"
    for i in $(seq 1 49); do
        case $((i % 7)) in
            0) echo "        - { match: { methods: [GET], path: /orders/$i }, body: '{\"order\": $i}' }" ;;
            1) echo "        - { match: { path_prefix: /catalog$i }, body: '{\"catalog\": $i}' }" ;;
            2) echo "        - { match: { methods: [GET], path_params: \"/accounts/{id}/items$i\" }, body: '{\"id\": \"{{path.id}}\"}' }" ;;
            3) echo "        - { match: { methods: [POST, PUT], path_params: \"/users/{id}\" }, body: '{\"written\": $i}' }" ;;
            4) echo "        - { match: { methods: [GET], path_params: \"/users/{id}\", headers: { X-Tenant: t$i } }, body: '{\"tenant\": $i}' }" ;;
            5) echo "        - { match: { methods: [GET], path_params: \"/users/{id}\", query: { page: \"$i\" } }, body: '{\"page\": $i}' }" ;;
            6) echo "        - { match: { methods: [GET], path_params: \"/users/{id}/friends/{friend}\" }, body: '{\"friend\": $i}' }" ;;
        esac
    done
    echo "        - { match: { methods: [GET], path_params: \"/users/{id}\" }, body: '{\"id\": \"{{path.id}}\", \"name\": \"Ada\"}' }"
    echo "routes:"
    echo "  - { name: users, match: { path_prefix: /users }, upstream: users }"
} >"$RUN_DIR/fifty.yaml"

for name in single fifty; do
    "$GW_BIN" check --config "$RUN_DIR/$name.yaml" >&2 || die "$name.yaml does not load"
    taskset -c "$SERVER_CPU" "$GW_BIN" serve --config "$RUN_DIR/$name.yaml" >"$RUN_DIR/$name.log" 2>&1 &
    PIDS+=($!)
done
for admin in $SINGLE_ADMIN $FIFTY_ADMIN; do
    for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$admin/readyz" >/dev/null && break; sleep 0.1; done
done
single_body=$(curl -fs "http://127.0.0.1:$SINGLE_PORT/users/7")
fifty_body=$(curl -fs "http://127.0.0.1:$FIFTY_PORT/users/7")
[[ "$single_body" == "$fifty_body" && "$single_body" == '{"id": "7", "name": "Ada"}' ]] \
    || die "the two stubs do not answer the same: '$single_body' / '$fifty_body'"

ticks() {  # ticks PID -> utime + stime of the process (all threads), in clock ticks
    awk '{print $14 + $15}' "/proc/$1/stat"
}
HZ=$(getconf CLK_TCK)
run() {  # run PORT PID SECONDS -> "requests/s cpu-us-per-request"
    local before after output
    before=$(ticks "$2")
    output=$(timeout -k 5 $(($3 + 30)) taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNECTIONS" -d"$3"s "http://127.0.0.1:$1/users/7")
    after=$(ticks "$2")
    awk -v ticks=$((after - before)) -v hz="$HZ" '
        / requests in / {requests = $1}
        /^Requests\/sec:/ {rate = $2}
        END {printf "%s %.2f\n", rate, (requests > 0 ? ticks * 1e6 / hz / requests : 0)}' <<<"$output"
}
log "warm-up"
run "$SINGLE_PORT" "${PIDS[0]}" 1 >/dev/null
run "$FIFTY_PORT" "${PIDS[1]}" 1 >/dev/null
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
single=(); fifty=()
for rep in $(seq 1 "$REPS"); do
    if (( rep % 2 == 1 )); then order="single fifty"; else order="fifty single"; fi
    for name in $order; do
        if [[ $name == single ]]; then
            single+=("$(run "$SINGLE_PORT" "${PIDS[0]}" "$DURATION")")
        else
            fifty+=("$(run "$FIFTY_PORT" "${PIDS[1]}" "$DURATION")")
        fi
    done
    log "rep $rep: single ${single[-1]}, fifty ${fifty[-1]} (req/s, CPU µs per request)"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The handler alone, in process (GatewayBench: no sockets, so none of the kernel's time and far less noise): the CPU
# per request of each configuration, interleaved as above.
inprocess=""
if [[ -x "$BENCH_BIN" ]]; then
    single_cpu=(); fifty_cpu=()
    for rep in $(seq 1 "$REPS"); do
        for name in single fifty; do
            value=$(timeout -k 5 60 taskset -c "$SERVER_CPU" "$BENCH_BIN" --config "$RUN_DIR/$name.yaml" --path /users/7 \
                --concurrency "$CONNECTIONS" --duration 2 --warmup 0.3 2>/dev/null | tail -1 \
                | sed -n 's/.*"cpu_us_per_request":\([0-9.]*\).*/\1/p')
            if [[ $name == single ]]; then single_cpu+=("$value"); else fifty_cpu+=("$value"); fi
        done
    done
    inprocess=$(printf '%s\n' "${single_cpu[*]}" "${fifty_cpu[*]}" | /usr/bin/env python3 -c '
import statistics, sys
single, fifty = ([float(x) for x in line.split()] for line in sys.stdin.read().splitlines())
print(f"| handler in process (GatewayBench), CPU µs/request | single {statistics.median(single):.2f} ({min(single):.2f}-{max(single):.2f}) "
      f"| fifty {statistics.median(fifty):.2f} ({min(fifty):.2f}-{max(fifty):.2f}) | single/fifty {statistics.median(single) / statistics.median(fifty):.3f} |")
')
fi

summary=$(printf '%s\n' "${single[*]}" "${fifty[*]}" | /usr/bin/env python3 -c '
import statistics, sys
lines = sys.stdin.read().splitlines()
def pairs(line):
    values = [float(x) for x in line.split()]
    return values[0::2], values[1::2]
(single, single_cpu), (fifty, fifty_cpu) = pairs(lines[0]), pairs(lines[1])
ratios = [f / s for s, f in zip(single, fifty)]
def row(name, rates, cpu):
    return (f"| {name} | {statistics.median(rates):,.0f} | {min(rates):,.0f}-{max(rates):,.0f} | "
            f"{statistics.median(cpu):.1f} | {min(cpu):.1f}-{max(cpu):.1f} |")
print("| stub | req/s median | min-max | CPU µs/request median | min-max |")
print("|---|---|---|---|---|")
print(row("single response", single, single_cpu))
print(row("50 responses, 50th matched, templated body", fifty, fifty_cpu))
print()
print(f"RATIO fifty/single req/s: {statistics.median(fifty) / statistics.median(single):.3f} of the medians; "
      f"per repetition {min(ratios):.3f}-{max(ratios):.3f} (median {statistics.median(ratios):.3f})")
print(f"RATIO single/fifty CPU per request (the req/s one CPU would give): "
      f"{statistics.median(single_cpu) / statistics.median(fifty_cpu):.3f}")
')
{
    echo "$summary"
    [[ -n "$inprocess" ]] && { echo; echo "$inprocess"; }
    echo
    echo "conditions: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(nproc) CPUs; gateways pinned to CPU $SERVER_CPU, wrk to CPU $CLIENT_CPU;"
    echo "  wrk -t1 -c$CONNECTIONS -d${DURATION}s, $REPS interleaved repetitions; load average $load_before before, $load_after after;"
    echo "  $(swift --version 2>&1 | head -1); commit $(git -C "$ROOT" rev-parse --short HEAD); $(wrk --version 2>&1 | head -1 | cut -c1-40)"
} | tee "$RUN_DIR/summary.md"
