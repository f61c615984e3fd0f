# Shared by scripts/pgo-train.sh and scripts/pgo-trace.sh (sourced, not run): a scratch directory removed on exit with
# the gateway it started, free loopback ports, the shipped configuration on them, and the requests asked of it.

# pgo_need NAME TOOL...: fails unless every TOOL is on PATH.
pgo_need() {
    local name=$1 tool
    shift
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$name: $tool is missing" >&2; exit 1; }
    done
}

# pgo_scratch PREFIX: makes $run, a scratch directory; on exit the gateway ($gateway, when set) is killed and $run
# removed.
pgo_scratch() {
    run=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    gateway=""
    trap 'pgo_cleanup' EXIT
}
pgo_cleanup() {
    [ -z "$gateway" ] || kill -KILL "$gateway" 2>/dev/null || true
    rm -rf "$run"
}

# pgo_free_ports COUNT: COUNT free loopback ports, on one line.
pgo_free_ports() {
    python3 -c '
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))' "$1"
}

# pgo_shipped_config DIR PORT ADMIN_PORT: Configuration/ copied into DIR (stub upstreams only), listening on PORT with
# its admin endpoints on ADMIN_PORT, with two event loops.
pgo_shipped_config() {
    mkdir -p "$1"
    cp -R Configuration/. "$1/"
    sed -i -e "s|127.0.0.1:8080|127.0.0.1:$2|" -e "s|127.0.0.1:9090|127.0.0.1:$3|" \
        -e "s|^  threads: .*|  threads: 2|" "$1/gateway.yaml"
    printf '{"name": "Ada"}' >"$1/user.json"
}

# pgo_wait_port NAME PORT [TRIES]: until PORT accepts (every 0.1 s, 100 times unless TRIES), or fails when $gateway
# exits first (its output, $run/gateway.out, to stderr).
pgo_wait_port() {
    local _
    for _ in $(seq "${3:-100}"); do
        (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
        kill -0 "$gateway" 2>/dev/null || { cat "$run/gateway.out" >&2; exit 1; }
        sleep 0.1
    done
    echo "$1: nothing listens on port $2" >&2
    exit 1
}

# pgo_ask_shipped LOAD DIR PORT ADMIN_PORT: the shipped configuration's routes asked with LOAD (a function taking
# h2load's arguments): the catalog, a user over h2c, a created user (the next POST conflicts), a 64 KiB body and
# the metrics.
pgo_ask_shipped() {
    local load=$1 dir=$2 plain="http://127.0.0.1:$3"
    "$load" --h1 -n 2 -c 1 "$plain/api/catalog"
    "$load" -n 2 -c 1 "$plain/api/users/7"
    "$load" --h1 -n 1 -c 1 -d "$dir/user.json" -H 'content-type: application/json' "$plain/api/users"
    "$load" --h1 -n 1 -c 1 "$plain/bulk/data"
    "$load" --h1 -n 1 -c 1 "http://127.0.0.1:$4/metrics"
}

# pgo_stop NAME: stops $gateway (SIGTERM) and fails unless it exits cleanly.
pgo_stop() {
    kill -TERM "$gateway"
    wait "$gateway" || { echo "$1: the gateway did not stop cleanly" >&2; cat "$run/gateway.out" >&2; exit 1; }
    gateway=""
}
