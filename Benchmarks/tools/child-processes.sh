# Sourced by benchmark scripts that start their processes themselves (counts.sh, memory.sh): append each PID to PIDS;
# on exit, or on INT/TERM, every one is killed and waited for.
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
