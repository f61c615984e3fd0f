#!/usr/bin/env bash
# Runs every test: installs the system packages the tests need, builds, runs every fuzz target briefly, and runs the
# Swift test suites.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
swift build --build-tests
# The sources' format (.swift-format); a finding fails the run after the tests, which run regardless.
format_status=0
scripts/check-format.sh || format_status=$?
# Deploy artefacts (Docker, Kubernetes, systemd) and every shipped configuration, checked without a container engine.
scripts/check-deploy.sh
# Moya's DocC documentation: builds without warnings, every public declaration documented, the pages' code compiles.
scripts/docs.sh
# Every libFuzzer target for a few seconds under AddressSanitizer, from its committed corpus (docs/fuzzing.md): about
# two minutes with its own build. A failure is reported after the tests, which run regardless.
fuzz_status=0
scripts/fuzz.sh --brief 8 || fuzz_status=$?
log=$(mktemp)
status=0
# Suites run one after another: on a 2-core machine Swift's cooperative pool has 2 threads, and suites that drive real
# processes and sockets in parallel starve each other's timers (about 30 s in all).
swift test --skip-build --no-parallel "$@" 2>&1 | tee "$log" || status=$?
# One plain summary line from Swift Testing's closing line ("Test run with N tests ... passed/failed ... with K issues").
summary=$(grep -E "Test run with [0-9]+ tests?" "$log" | tail -1 || true)
total=$(echo "$summary" | sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p')
failed=$(grep -cE "^✘ Test [^ ]+\(.*\) failed after" "$log" || true)
if [ "$fuzz_status" -ne 0 ]; then
    echo "fuzz: FAILED (scripts/fuzz.sh --brief; its findings are in Fuzz/findings)"
    [ "$status" -ne 0 ] || status=$fuzz_status
fi
if [ "$format_status" -ne 0 ]; then
    echo "format: FAILED (scripts/check-format.sh; swift format format --in-place --recursive fixes it)"
    [ "$status" -ne 0 ] || status=$format_status
fi
if [ -n "$total" ]; then
    echo "tests: $(( total - failed )) passed, ${failed} failed"
fi
rm -f "$log"
exit "$status"
