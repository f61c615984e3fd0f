#!/usr/bin/env bash
# The start-up trace of scripts/build-release.sh: runs a moya-gateway under valgrind's callgrind on the shipped
# Configuration/ (stub upstreams only, two event loops), asks it a few questions, stops it, and leaves callgrind's
# output, which names every function that ran, the toolchain's included (scripts/pgo-order.py lays those out together).
#
#   scripts/pgo-trace.sh GATEWAY_BINARY CALLGRIND_OUT
#
# Needs valgrind, cc and objcopy (binutils), h2load and python3. Bounded: the gateway gets 300 s to start under
# valgrind, every request is h2load -n under a timeout, and the gateway is stopped by PID on exit.
set -euo pipefail
binary=$1
output=$2
for tool in valgrind cc objcopy h2load python3; do
    command -v "$tool" >/dev/null || { echo "pgo-trace: $tool is missing" >&2; exit 1; }
done
run=$(mktemp -d "${TMPDIR:-/tmp}/moya-gateway-trace.XXXXXX")
gateway=""
cleanup() {
    [ -z "$gateway" ] || kill -KILL "$gateway" 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT

read -r port admin_port < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in sockets))')
mkdir "$run/config"
cp -R Configuration/. "$run/config/"
sed -i -e "s|127.0.0.1:8080|127.0.0.1:$port|" -e "s|127.0.0.1:9090|127.0.0.1:$admin_port|" \
    -e "s|^  threads: .*|  threads: 2|" "$run/config/gateway.yaml"
# valgrind 3.19 cannot read the DWARF 5 that lld writes (the symbol table is all a trace needs), and its sigsuspend
# wrapper writes to the caller's mask, which the Swift runtime passes read-only.
objcopy --strip-debug "$binary" "$run/moya-gateway"
cat >"$run/sigsuspend.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (long)(_NSIG / 8));
}
C
cc -O2 -shared -fPIC -o "$run/sigsuspend.so" "$run/sigsuspend.c"
printf '{"name": "Ada"}' >"$run/user.json"

LD_PRELOAD="$run/sigsuspend.so" valgrind --tool=callgrind --demangle=no --dump-instr=no --collect-systime=no \
    --callgrind-out-file="$run/callgrind.out" "$run/moya-gateway" serve --config "$run/config/gateway.yaml" \
    >"$run/gateway.out" 2>&1 &
gateway=$!
for _ in $(seq 3000); do
    (exec 3<>"/dev/tcp/127.0.0.1/$admin_port") 2>/dev/null && break
    kill -0 "$gateway" 2>/dev/null || { cat "$run/gateway.out" >&2; exit 1; }
    sleep 0.1
done
ask() {
    local result
    result=$(timeout 60 h2load "$@" 2>&1) || { echo "pgo-trace: h2load $* failed: $result" >&2; exit 1; }
}
plain="http://127.0.0.1:$port"
ask --h1 -n 2 -c 1 "$plain/api/catalog"
ask -n 2 -c 1 "$plain/api/users/7"
ask --h1 -n 1 -c 1 -d "$run/user.json" -H 'content-type: application/json' "$plain/api/users"
ask --h1 -n 1 -c 1 "http://127.0.0.1:$admin_port/metrics"
kill -TERM "$gateway"
wait "$gateway" || { echo "pgo-trace: the gateway did not stop cleanly" >&2; cat "$run/gateway.out" >&2; exit 1; }
gateway=""
cp "$run/callgrind.out" "$output"
