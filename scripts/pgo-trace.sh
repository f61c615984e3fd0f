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
# shellcheck source=scripts/pgo-lib.sh
source "$(dirname "$0")/pgo-lib.sh"
pgo_need pgo-trace valgrind cc objcopy h2load python3
pgo_scratch moya-gateway-trace

read -r port admin_port < <(pgo_free_ports 2)
pgo_shipped_config "$run/config" "$port" "$admin_port"
# valgrind 3.19 cannot read the DWARF 5 that lld writes (the symbol table is all a trace needs), and its sigsuspend
# wrapper writes to the caller's mask, which the Swift runtime passes read-only (scripts/valgrind-sigsuspend.c).
objcopy --strip-debug "$binary" "$run/moya-gateway"
cc -O2 -shared -fPIC -o "$run/sigsuspend.so" "$(dirname "$0")/valgrind-sigsuspend.c"

LD_PRELOAD="$run/sigsuspend.so" valgrind --tool=callgrind --demangle=no --dump-instr=no --collect-systime=no \
    --callgrind-out-file="$run/callgrind.out" "$run/moya-gateway" serve --config "$run/config/gateway.yaml" \
    >"$run/gateway.out" 2>&1 &
gateway=$!
pgo_wait_port pgo-trace "$admin_port" 3000
ask() {
    local result
    result=$(timeout 60 h2load "$@" 2>&1) || { echo "pgo-trace: h2load $* failed: $result" >&2; exit 1; }
}
pgo_ask_shipped ask "$run/config" "$port" "$admin_port"
pgo_stop pgo-trace
cp "$run/callgrind.out" "$output"
