#!/usr/bin/env bash
# Builds the moya-gateway that deploy/ ships: a release build optimized with a profile of its own hot path (LLVM's
# IR-level profile-guided optimization), and prints the binary's path as the last line on stdout.
#
#   scripts/build-release.sh [--static-swift-stdlib] [--show-bin-path]
#
# With --show-bin-path it builds nothing and prints where the binary is (or would be), as `swift build` does.
#
# Three steps, each build in its own scratch directory under PGO_SCRATCH (SwiftPM does not recompile what it built
# when only -Xswiftc flags change, so a build with other flags never shares one):
#   1. a release build instrumented to count what runs (PGO_SCRATCH/instrumented),
#   2. a bounded training run of it over loopback (scripts/pgo-train.sh), merged into PGO_SCRATCH/moya-gateway.profdata,
#   3. the release build that the profile guides (PGO_SCRATCH/release): inlining, block order and the split of hot
#      from cold code follow what the training ran. It runs fewer instructions per request, over much less code, than
#      the plain build (Benchmarks/README.md, session 54).
# Each step reuses its scratch directory, so a rebuild after a change recompiles what changed; the training always runs
# again, so the profile matches the sources. A profile is never committed.
#
# Env: PGO_SCRATCH=.build-pgo (…-static with --static-swift-stdlib) PGO=1 (0: one plain release build in
#      PGO_SCRATCH/plain, for comparisons)
# Needs what scripts/pgo-train.sh needs (h2load, openssl, python3) and the toolchain's llvm-profdata and profile
# runtime (both in every Swift toolchain for Linux).
set -euo pipefail
cd "$(dirname "$0")/.."
static=()
suffix=""
show_only=0
for argument in "$@"; do
    case "$argument" in
        --static-swift-stdlib) static=(--static-swift-stdlib); suffix="-static" ;;
        --show-bin-path) show_only=1 ;;
        *) echo "usage: scripts/build-release.sh [--static-swift-stdlib] [--show-bin-path]" >&2; exit 2 ;;
    esac
done
scratch="${PGO_SCRATCH:-.build-pgo$suffix}"
build=(swift build -c release "${static[@]}" --product moya-gateway)

# built SCRATCH FLAGS...: the binary's path in the build of that scratch directory and those flags.
built() {
    local directory=$1
    shift
    echo "$("${build[@]}" --scratch-path "$directory" "$@" --show-bin-path)/moya-gateway"
}

if [ "${PGO:-1}" = 0 ]; then
    [ "$show_only" = 1 ] || "${build[@]}" --scratch-path "$scratch/plain" >&2
    built "$scratch/plain"
    exit 0
fi
case "$scratch" in
    /*) profile="$scratch/moya-gateway.profdata" ;;
    *) profile="$(pwd)/$scratch/moya-gateway.profdata" ;;
esac
guided=(-Xswiftc -Xfrontend -Xswiftc "-ir-profile-use=$profile")
if [ "$show_only" = 1 ]; then
    built "$scratch/release" "${guided[@]}"
    exit 0
fi

toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
runtime=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.profile-"$(uname -m)".a 2>/dev/null | head -n 1)
profdata=$(command -v llvm-profdata || echo "$toolchain/bin/llvm-profdata")
[ -f "$runtime" ] || { echo "build-release: no LLVM profile runtime under $toolchain/lib/clang" >&2; exit 1; }
[ -x "$profdata" ] || { echo "build-release: no llvm-profdata in $toolchain/bin" >&2; exit 1; }

echo "build-release: 1/3 instrumented build ($scratch/instrumented)" >&2
# The driver's -ir-profile-generate is not passed on to the frontend by Swift 6.3, hence -Xfrontend, and the profile
# runtime is linked by hand (the driver adds it only for -profile-generate, Swift's own coverage counters).
instrument=(-Xswiftc -Xfrontend -Xswiftc -ir-profile-generate -Xlinker "$runtime" -Xlinker -u__llvm_profile_runtime)
"${build[@]}" --scratch-path "$scratch/instrumented" "${instrument[@]}" >&2
instrumented=$(built "$scratch/instrumented" "${instrument[@]}")

echo "build-release: 2/3 training run" >&2
rm -rf "$scratch/profiles"
scripts/pgo-train.sh "$instrumented" "$scratch/profiles" >&2
"$profdata" merge -o "$profile" "$scratch"/profiles/*.profraw

echo "build-release: 3/3 profile-guided build ($scratch/release)" >&2
"${build[@]}" --scratch-path "$scratch/release" "${guided[@]}" >&2
built "$scratch/release" "${guided[@]}"
