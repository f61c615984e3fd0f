#!/usr/bin/env bash
# Runs Moya's concurrency tests (trackInflights, shared token refresh, cancellation, many concurrent requests,
# redirects, progress) under ThreadSanitizer, in a separate build directory so the normal build stays untouched.
# The first build takes several minutes. Extra arguments replace the default filter, e.g.
#   scripts/tsan.sh 'TrackInflightsTests'
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-MoyaTests\.(TrackInflightsTests|MoyaProviderAsyncTests|NetworkBehaviourTests|NetworkEdgeTests|NetworkPluginTests|NetworkTokenRefreshTests|AccessTokenRefreshPluginTests|NetworkRedirectTests|NetworkProgressTests)}"
scratch=.build-tsan
swift build --build-tests --sanitize=thread --scratch-path "$scratch"
log=$(mktemp)
status=0
# Every report is printed (halt_on_error=0) and counted below; scripts/tsan.supp lists the false positives of
# Synchronization.Mutex (see there).
TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}" \
    swift test --skip-build --no-parallel --sanitize=thread --scratch-path "$scratch" --filter "$filter" 2>&1 | tee "$log" || status=$?
races=$(grep -c "WARNING: ThreadSanitizer" "$log" || true)
echo "tsan: ${races} ThreadSanitizer warnings, swift test exit status ${status}"
rm -f "$log"
[ "$races" -eq 0 ] && exit "$status" || exit 1
