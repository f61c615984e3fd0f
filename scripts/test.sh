#!/usr/bin/env bash
# Runs every test: installs the system packages the tests need, builds, and runs the Swift test suites.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
swift build --build-tests
swift test --skip-build "$@"
