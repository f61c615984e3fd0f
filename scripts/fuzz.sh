#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (docs/fuzzing.md): the `MoyaFuzz` executable's targets built with
# `-sanitize=fuzzer,address` in their own scratch path (.build-fuzz), so the normal build stays untouched.
#
#   scripts/fuzz.sh                          build the fuzz build (release) and list the targets
#   scripts/fuzz.sh --brief [SECONDS]        build (debug: quicker to compile) and run every target SECONDS (8) each;
#                                            scripts/test.sh runs this
#   scripts/fuzz.sh TARGET [--time SECONDS | --runs N] [--debug] [-- LIBFUZZER_FLAGS...]
#                                            one campaign (release build), e.g. for an hour at low priority:
#                                            nice -n 19 scripts/fuzz.sh config --time 3600
#   scripts/fuzz.sh TARGET --replay FILE...  run inputs (a crash reproducer) once, with the sanitizers
#
# A campaign starts from the committed seeds (Fuzz/corpus/TARGET) and its own earlier finds
# (Fuzz/findings/TARGET/corpus, git-ignored), which it adds to. A crash, sanitizer report, leak, timeout (-timeout,
# 10 s per input) or memory blow-up (-rss_limit_mb, 2048) stops it with a non-zero status and leaves the input in
# Fuzz/findings/TARGET/ (crash-*, leak-*, timeout-*, oom-*); once the bug is fixed, copy it into Fuzz/corpus/TARGET
# as regression-NAME, where FuzzCorpusTests and every later run replay it.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build-fuzz
findings=Fuzz/findings
configuration=release
mode=campaign
target=""
seconds=""
runs=""
brief_seconds=8
replay=()
extra=()

while [ $# -gt 0 ]; do
    case "$1" in
        --brief) mode=brief; configuration=debug
                 if [ $# -gt 1 ] && [[ "$2" =~ ^[0-9]+$ ]]; then brief_seconds=$2; shift; fi ;;
        --time) seconds=$2; shift ;;
        --runs) runs=$2; shift ;;
        --debug) configuration=debug ;;
        --release) configuration=release ;;
        --replay) mode=replay; shift; replay=("$@"); break ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) target=$1 ;;
    esac
    shift
done

build() {
    echo "fuzz: building MoyaFuzz ($configuration, -sanitize=fuzzer,address) in $scratch"
    # -Xcc: the C code built from source (libyaml under Yams, the shims) gets coverage too. Progress lines and gold's
    # "Cannot export local symbol" lines about ASan's own symbols are left out.
    swift build -c "$configuration" --scratch-path "$scratch" --product MoyaFuzz \
        --sanitize=address -Xswiftc -sanitize=fuzzer -Xswiftc -DMOYA_FUZZING -Xcc -fsanitize=fuzzer-no-link \
        2>&1 | grep -vE "Cannot export local symbol|^\[[0-9]+/[0-9]+\] |^(Fetching|Fetched|Creating working copy|Working copy|Computing|Computed) " || true
    [ -x "$scratch/$configuration/MoyaFuzz" ] || { echo "fuzz: build failed" >&2; exit 1; }
}

binary() { echo "$scratch/$configuration/MoyaFuzz"; }

# One libFuzzer run of target $1 for at most $2 seconds (or $runs inputs); its log in $findings/$1/last-run.log.
# Prints one summary line; returns libFuzzer's status.
run_target() {
    local name=$1 time=$2 corpus_dir=$3
    local info max_len dict
    info=$("$(binary)" --list | awk -F'\t' -v t="$name" '$1 == t')
    [ -n "$info" ] || { echo "fuzz: no target named $name (see scripts/fuzz.sh with no argument)" >&2; return 2; }
    max_len=$(echo "$info" | cut -f2)
    dict=$(echo "$info" | cut -f3)
    mkdir -p "$findings/$name" "$corpus_dir"
    local flags=(-max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                 -artifact_prefix="$findings/$name/")
    [ "$dict" != "-" ] && flags+=(-dict="Fuzz/dictionaries/$dict")
    [ -n "$time" ] && flags+=(-max_total_time="$time")
    [ -n "$runs" ] && flags+=(-runs="$runs")
    local log="$findings/$name/last-run.log" status=0 started
    started=$(date +%s)
    # The first corpus directory receives new inputs; the committed seeds are only read.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}" \
        "$(binary)" "$name" "${flags[@]}" "${extra[@]}" "$corpus_dir" "Fuzz/corpus/$name" >"$log" 2>&1 || status=$?
    local executed rate
    executed=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -1)
    local result=ok
    if [ "$status" -ne 0 ]; then
        result="FAILED (status $status): $(grep -m1 -E "ERROR: |invariant failed|SUMMARY: " "$log" || echo "see $log")"
        grep -E "Test unit written to|invariant failed" "$log" | sed 's/^/    /' || true
        echo "    log: $log; reproduce: scripts/fuzz.sh $name --replay $(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -1)"
    fi
    printf 'fuzz: %-14s %10s runs %7s/s %4ss  corpus %s  %s\n' "$name" "${executed:-?}" "${rate:-?}" \
        "$(( $(date +%s) - started ))" "$(ls "Fuzz/corpus/$name" | wc -l)+$(ls "$corpus_dir" | wc -l)" "$result"
    return "$status"
}

case "$mode" in
    brief)
        build
        status=0
        work=$(mktemp -d)
        for name in $("$(binary)" --list | cut -f1); do
            run_target "$name" "$brief_seconds" "$work/$name" || status=1
        done
        rm -rf "$work"
        [ "$status" -eq 0 ] && echo "fuzz: every target ran ${brief_seconds}s clean" || echo "fuzz: FAILED"
        exit "$status"
        ;;
    replay)
        [ -n "$target" ] || { echo "fuzz.sh: --replay needs a TARGET before it" >&2; exit 2; }
        [ -x "$(binary)" ] || build
        SWIFT_BACKTRACE=enable=no exec "$(binary)" "$target" "${replay[@]}"
        ;;
    campaign)
        build
        if [ -z "$target" ]; then
            "$(binary)" --list | awk -F'\t' '{ printf "  %-14s %s\n", $1, $4 }'
            exit 0
        fi
        run_target "$target" "$seconds" "$findings/$target/corpus"
        ;;
esac
