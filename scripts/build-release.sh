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
#      the plain build (Benchmarks/README.md, session 54). It is linked with the toolchain's lld: each function in a
#      section of its own, laid out in the order of the profile (the hot path on adjacent pages, the code start-up ran
#      next to each other), code that never ran apart, and the relative relocations packed (RELR, where glibc is 2.36
#      or newer), which the loader otherwise reads 2 MiB of at every start (Benchmarks/README.md, session 55).
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
order="${profile%.profdata}.order"
guided=(-Xswiftc -Xfrontend -Xswiftc "-ir-profile-use=$profile" -Xlinker -z -Xlinker keep-text-section-prefix)
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
if [ -x "$toolchain/bin/ld.lld" ]; then
    guided+=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld
        -Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering)
    # DT_RELR needs glibc 2.36 where the binary runs; it is built where it runs (or in an image of the same release).
    glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
    if [ -n "$glibc" ] && [ "$(printf '%s\n' 2.36 "$glibc" | sort -V | head -n 1)" = 2.36 ]; then
        guided+=(-Xlinker -z -Xlinker pack-relative-relocs)
    fi
fi
if [ "$show_only" = 1 ]; then
    built "$scratch/release" "${guided[@]}"
    exit 0
fi

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
# The link order: every function the training ran, the most often run first (a local function's profile name is
# prefixed with its object's path and a semicolon, its symbol is not).
"$profdata" show --all-functions --counts "$profile" | awk '
    /^  [^ ].*:$/ { name = substr($0, 3, length($0) - 3); sub(/^.*;/, "", name); next }
    /^    Block counts: \[/ {
        counts = $0; sub(/^.*\[/, "", counts); sub(/\].*$/, "", counts)
        most = 0; n = split(counts, count, ", ")
        for (i = 1; i <= n; i++) if (count[i] + 0 > most) most = count[i] + 0
        if (most > 0 && name != "") printf "%.0f\t%s\n", most, name
        name = ""
    }' | sort -t "$(printf '\t')" -k1,1nr -k2,2 | cut -f2 >"$order"

echo "build-release: 3/3 profile-guided build ($scratch/release)" >&2
"${build[@]}" --scratch-path "$scratch/release" "${guided[@]}" >&2
built "$scratch/release" "${guided[@]}"
