# Sourced by the gateway benchmarks (coalesce.sh, gzip.sh, h2.sh, layers.sh, profile.sh, relay.sh, websocket.sh) after they set RUN_DIR and any of lib.sh's knobs:
# finds the repository and the shared harness (../shared/bench, or SHARED_BENCH=), sources the harness's lib.sh, and
# defines what those scripts share beyond it.
#   ROOT, HERE (Benchmarks/), SHARED_BENCH (absolute)
#   build_gateway            release build of moya-gateway unless SKIP_BUILD=1; sets GW_BIN
#   build_conditions         the swift, commit and CPU lines of a conditions.txt (on stdout)
ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
SHARED_BENCH="${SHARED_BENCH:-$ROOT/../shared/bench}"
if [[ ! -f "$SHARED_BENCH/lib.sh" ]]; then
    echo "ERROR: the shared benchmark harness was not found at $SHARED_BENCH; set SHARED_BENCH=/path/to/shared/bench." >&2
    exit 1
fi
SHARED_BENCH="$(cd "$SHARED_BENCH" && pwd)"
HERE="$ROOT/Benchmarks"
# shellcheck source=/dev/null
source "$SHARED_BENCH/lib.sh"

build_gateway() {
    if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
        log "building release: moya-gateway"
        (cd "$ROOT" && swift build -c release --product moya-gateway >&2)
    fi
    GW_BIN="$(cd "$ROOT" && swift build -c release --show-bin-path)/moya-gateway"
    [[ -x "$GW_BIN" ]] || die "missing $GW_BIN (build failed?)"
}

build_conditions() {
    echo "swift: $(swift --version 2>&1 | head -1)"
    echo "commit: $(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD))"
    echo "cpu_model: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
}
