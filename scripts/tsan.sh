#!/usr/bin/env bash
# Runs tests under ThreadSanitizer, in a separate build directory so the normal build stays untouched: Moya's
# concurrency suites (trackInflights, shared token refresh, cancellation, many concurrent requests, redirects,
# progress) and the gateway's coalescing suites (docs/reliability.md COAL-10), which drive the TSan-built moya-gateway
# binary too. The first build takes several minutes. Extra arguments replace the default filter, e.g.
#   scripts/tsan.sh 'TrackInflightsTests'
#
# The build defines MOYA_TSAN_LOCKS: `Locked` (Sources/Locking) is then a pthread mutex, which TSan sees, instead of
# `Synchronization.Mutex`, whose futex path in the uninstrumented Swift runtime TSan cannot see.
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-MoyaTests\.(TrackInflightsTests|MoyaProviderAsyncTests|NetworkBehaviourTests|NetworkEdgeTests|NetworkPluginTests|NetworkTokenRefreshTests|AccessTokenRefreshPluginTests|NetworkRedirectTests|NetworkProgressTests)|GatewayTests\.(GatewayCoalescingFaultTests|CoalescingKeyTests)}"
scratch=.build-tsan
flags=(--sanitize=thread --scratch-path "$scratch" -Xswiftc -DMOYA_TSAN_LOCKS)
swift build --build-tests "${flags[@]}"
reports=$(mktemp -d)
status=0
# Every report is printed (halt_on_error=0), to one file per process, so that those of the gateway processes the
# tests start are counted too. No suppressions: with `Locked` a pthread mutex there, TSan sees every lock.
# MOYA_TEST_SLOWDOWN: bounds that tell a stall from slowness (see TestSupport.Slowdown) allow for TSan's overhead.
MOYA_TEST_SLOWDOWN="${MOYA_TEST_SLOWDOWN:-4}" TSAN_OPTIONS="log_path=$reports/tsan halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    swift test --skip-build --no-parallel "${flags[@]}" --filter "$filter" || status=$?
races=$(cat "$reports"/tsan.* 2>/dev/null | grep -c "WARNING: ThreadSanitizer" || true)
cat "$reports"/tsan.* 2>/dev/null || true
echo "tsan: ${races} ThreadSanitizer warnings, swift test exit status ${status}"
rm -rf "$reports"
[ "$races" -eq 0 ] && exit "$status" || exit 1
