#!/usr/bin/env bash
# Runs tests under AddressSanitizer, in a separate build directory so the normal build stays untouched: the TLS
# (OpenSSL), HTTP/2 (nghttp2) and zlib glue hands raw pointers to C, and the end-to-end suites drive the ASan-built
# moya-gateway binary too. The first build takes several minutes. Extra arguments replace the default filter, e.g.
#   scripts/asan.sh 'HTTP2'
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-TLS|HTTP2|H2|Compression|Deflate|Gzip|Fuzz|Hostile|Fault|NothingLost|Streaming}"
scratch=.build-asan
swift build --build-tests --sanitize=address --scratch-path "$scratch"
reports=$(mktemp -d)
status=0
# Reports go to files, one per process, so that those of the gateway processes the tests start are counted too.
# detect_leaks=0: the run is about memory errors, not memory held until exit.
ASAN_OPTIONS="log_path=$reports/asan detect_leaks=0 ${ASAN_OPTIONS:-}" SWIFT_BACKTRACE=enable=no \
    swift test --skip-build --no-parallel --sanitize=address --scratch-path "$scratch" --filter "$filter" || status=$?
errors=$(cat "$reports"/asan.* 2>/dev/null | grep -c "ERROR: AddressSanitizer" || true)
cat "$reports"/asan.* 2>/dev/null || true
echo "asan: ${errors} AddressSanitizer errors, swift test exit status ${status}"
rm -rf "$reports"
[ "$errors" -eq 0 ] && exit "$status" || exit 1
