#!/usr/bin/env bash
# Checks the Swift sources against the checked-in .swift-format (4-space indents, 120 columns) with the toolchain's
# `swift format lint --strict`: exits non-zero when a file would be formatted differently or breaks a lint rule.
# `swift format format --in-place --recursive <the same paths>` applies the format.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=()
for path in Sources Tests Fuzz Benchmarks Examples; do
    if [ -d "$path" ] && [ -n "$(find "$path" -name '*.swift' -print -quit)" ]; then paths+=("$path"); fi
done
paths+=(Package.swift)
swift format lint --strict --recursive --configuration .swift-format "${paths[@]}"
