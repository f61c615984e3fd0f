#!/usr/bin/env bash
# Builds the moya-gateway that deploy/ ships: a release build optimized with a profile of its own hot path (LLVM's
# IR-level profile-guided optimization), and prints the binary's path as the last line on stdout.
#
#   scripts/build-release.sh [--static-swift-stdlib] [--show-bin-path]
#
# With --show-bin-path it builds nothing and prints where the binary is (or would be), as `swift build` does.
#
# Three steps, each build in its own scratch directory under PGO_SCRATCH (SwiftPM does not recompile what it built
# when only -Xswiftc flags change, so a build with other flags never shares one), and a fourth where it can:
#   1. a release build instrumented to count what runs (PGO_SCRATCH/instrumented),
#   2. a bounded training run of it over loopback (scripts/pgo-train.sh), merged into PGO_SCRATCH/moya-gateway.profdata,
#   3. the release build that the profile guides (PGO_SCRATCH/guided): inlining, block order and the split of hot
#      from cold code follow what the training ran. It runs fewer instructions per request, over much less code, than
#      the plain build (Benchmarks/README.md, session 54). It is linked with the toolchain's lld, each function in a
#      section of its own, in the order scripts/pgo-order.py makes (PGO_SCRATCH/moya-gateway.order: the hot path on
#      adjacent pages, code that never ran apart), with the relative relocations packed (RELR, where glibc is 2.36 or
#      newer), which the loader otherwise reads 2 MiB of at every start, and no dynamic symbols of its own;
#   4. with valgrind at hand, a trace of that binary starting on the shipped Configuration/ (scripts/pgo-trace.sh),
#      and the link again with the code start-up runs (the toolchain's too, which the profile cannot see) laid out
#      together: an idle gateway keeps far fewer of the binary's pages resident (Benchmarks/README.md, session 55).
# Each step reuses its scratch directory, so a rebuild after a change recompiles what changed; the training always runs
# again, so the profile matches the sources. A profile is never committed.
#
# Env: PGO_SCRATCH=.build-pgo (…-static with --static-swift-stdlib) PGO=1 (0: one plain release build in
#      PGO_SCRATCH/plain, for comparisons)
# Needs what scripts/pgo-train.sh needs (h2load, openssl, python3) and the toolchain's llvm-profdata and profile
# runtime (both in every Swift toolchain for Linux); step 4 also valgrind, cc and objcopy, and is left out without them.
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
    # --no-export-dynamic overrides the toolchain's static-stdlib link arguments, which export every global symbol of
    # the package's own objects: nothing loads the binary's symbols by name, and the loader searched (and kept resident)
    # a dynamic symbol table of 12,000 of them at every start.
    guided+=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld
        -Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering -Xlinker --no-export-dynamic)
    # DT_RELR needs glibc 2.36 where the binary runs; it is built where it runs (or in an image of the same release).
    glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
    if [ -n "$glibc" ] && [ "$(printf '%s\n' 2.36 "$glibc" | sort -V | head -n 1)" = 2.36 ]; then
        guided+=(-Xlinker -z -Xlinker pack-relative-relocs)
    fi
fi
if [ "$show_only" = 1 ]; then
    built "$scratch/guided" "${guided[@]}"
    exit 0
fi

runtime=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.profile-"$(uname -m)".a 2>/dev/null | head -n 1)
profdata=$(command -v llvm-profdata || echo "$toolchain/bin/llvm-profdata")
[ -f "$runtime" ] || { echo "build-release: no LLVM profile runtime under $toolchain/lib/clang" >&2; exit 1; }
[ -x "$profdata" ] || { echo "build-release: no llvm-profdata in $toolchain/bin" >&2; exit 1; }

echo "build-release: 1/4 instrumented build ($scratch/instrumented)" >&2
# The driver's -ir-profile-generate is not passed on to the frontend by Swift 6.3, hence -Xfrontend, and the profile
# runtime is linked by hand (the driver adds it only for -profile-generate, Swift's own coverage counters).
instrument=(-Xswiftc -Xfrontend -Xswiftc -ir-profile-generate -Xlinker "$runtime" -Xlinker -u__llvm_profile_runtime)
"${build[@]}" --scratch-path "$scratch/instrumented" "${instrument[@]}" >&2
instrumented=$(built "$scratch/instrumented" "${instrument[@]}")

echo "build-release: 2/4 training run" >&2
rm -rf "$scratch/profiles"
scripts/pgo-train.sh "$instrumented" "$scratch/profiles" >&2
"$profdata" merge -o "$profile" "$scratch"/profiles/*.profraw
# link_order [START_UP_TRACE]: the link order, from the profile (and the start-up trace).
link_order() {
    "$profdata" show --all-functions --counts "$profile" | python3 scripts/pgo-order.py ${1:+--start-up "$1"} >"$order"
}
link_order

echo "build-release: 3/4 profile-guided build ($scratch/guided)" >&2
"${build[@]}" --scratch-path "$scratch/guided" "${guided[@]}" >&2
binary=$(built "$scratch/guided" "${guided[@]}")

if [ -x "$toolchain/bin/ld.lld" ] && command -v valgrind >/dev/null && command -v cc >/dev/null \
    && command -v objcopy >/dev/null && [ -f Configuration/gateway.yaml ]; then
    echo "build-release: 4/4 start-up trace, and the link again in its order" >&2
    if scripts/pgo-trace.sh "$binary" "$scratch/start-up.callgrind" >&2; then
        link_order "$scratch/start-up.callgrind"
        # SwiftPM links again when its output is missing (the order file is not an input it knows of).
        rm -f "$binary"
        "${build[@]}" --scratch-path "$scratch/guided" "${guided[@]}" >&2
    else
        echo "build-release: the start-up trace failed; the binary keeps the profile's order" >&2
    fi
else
    echo "build-release: no valgrind (or no lld): start-up code is laid out by the profile alone" >&2
fi
echo "$binary"
