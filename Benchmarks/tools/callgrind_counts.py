#!/usr/bin/env python3
"""Per-request counts from callgrind dumps (Benchmarks/counts.sh).

    callgrind_counts.py DUMP...                                   one JSON object per dump: {"Ir": N, "calls": {...}}
    callgrind_counts.py --per-request N --name NAME DUMP_N DUMP_2N
        one TSV line: NAME, then (DUMP_2N - DUMP_N) / N for Ir and each counted function
    callgrind_counts.py --table RESULTS                          the TSV lines as a markdown table
    callgrind_counts.py --check BASELINE [--tolerance 0.03] RESULTS
        exit 1 when a count of RESULTS is above BASELINE's by more than the tolerance (a fraction) plus 0.5

A call is counted wherever it comes from (any caller, any thread, through the PLT or not): the sum of the `calls=`
lines whose callee (`cfn=`) is the function, matched exactly by symbol. Ir is the dump's `summary:` (every thread).
"""
import argparse
import json
import re
import sys

# What a request pays for, in the order the table prints them, with the table's column titles.
FUNCTIONS = [
    ("swift_retain", "retain"),
    ("swift_release", "release"),
    ("swift_bridgeObjectRetain", "bridged retain"),
    ("swift_bridgeObjectRelease", "bridged release"),
    ("swift_allocObject", "allocObject"),
    ("malloc", "malloc"),
    ("free", "free"),
    ("swift_task_switch", "task_switch"),
    ("swift_task_alloc", "task_alloc"),
    ("swift_continuation_resume", "continuation_resume"),
    ("swift_beginAccess", "beginAccess"),
]
METRICS = ["Ir"] + [name for name, _ in FUNCTIONS]
TITLES = {"Ir": "instructions"} | {name: title for name, title in FUNCTIONS}

NAME_REF = re.compile(r"^\((\d+)\)(?: (.*))?$")


def parse(path):
    """The dump's total Ir and its call counts of FUNCTIONS."""
    names = {}  # callgrind's compressed ids ("(12)") -> names
    calls = {name: 0 for name in METRICS[1:]}
    total = None
    callee = None
    with open(path, errors="replace") as dump:
        for line in dump:
            if line.startswith("calls="):
                if callee in calls:
                    calls[callee] += int(line[6:].split()[0])
            elif line.startswith("cfn="):
                callee = resolve(names, line[4:].rstrip("\n"))
            elif line.startswith("fn="):
                resolve(names, line[3:].rstrip("\n"))
                callee = None
            elif line.startswith("summary:"):
                total = int(line.split()[1])
            elif line.startswith("totals:") and total is None:
                total = int(line.split()[1])
    return {"Ir": total or 0, "calls": calls}


def resolve(names, text):
    match = NAME_REF.match(text)
    if not match:
        return text
    ident, name = match.groups()
    if name is not None:
        names[ident] = name
        return name
    return names.get(ident, "")


def flat(parsed):
    return {"Ir": parsed["Ir"]} | parsed["calls"]


def read_results(path):
    """NAME -> {metric: value} from TSV lines (a header line starting with '#' or 'target' is skipped)."""
    rows = {}
    with open(path) as file:
        for line in file:
            if not line.strip() or line.startswith("#") or line.startswith("target\t"):
                continue
            fields = line.rstrip("\n").split("\t")
            rows[fields[0]] = {metric: float(value) for metric, value in zip(METRICS, fields[1:])}
    return rows


def format_value(metric, value):
    return f"{value:,.0f}" if metric == "Ir" else f"{value:.1f}"


def table(rows):
    lines = ["| target | " + " | ".join(TITLES[m] for m in METRICS) + " |",
             "|---|" + "---:|" * len(METRICS)]
    for name, row in rows.items():
        lines.append(f"| {name} | " + " | ".join(format_value(m, row[m]) for m in METRICS) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-request", type=int)
    parser.add_argument("--name")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--check")
    parser.add_argument("--tolerance", type=float, default=0.03)
    parser.add_argument("--columns", action="store_true", help="print the metrics' names, in column order")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()

    if args.columns:
        print(", ".join(METRICS))
        return

    if args.per_request:
        first, second = (flat(parse(path)) for path in args.paths)
        values = [(second[m] - first[m]) / args.per_request for m in METRICS]
        print("\t".join([args.name] + [f"{v:.2f}" for v in values]))
    elif args.table:
        print(table(read_results(args.paths[0])))
    elif args.check:
        baseline = read_results(args.check)
        current = read_results(args.paths[0])
        risen = []
        for name, row in current.items():
            if name not in baseline:
                continue
            for metric in METRICS:
                before, now = baseline[name][metric], row[metric]
                if now > before * (1 + args.tolerance) + 0.5:
                    risen.append(f"{name} {TITLES[metric]}: {format_value(metric, before)} -> "
                                 f"{format_value(metric, now)} per request")
        if risen:
            print("counts rose beyond the tolerance (" + f"{args.tolerance:.0%} + 0.5):", file=sys.stderr)
            for line in risen:
                print("  " + line, file=sys.stderr)
            sys.exit(1)
        print(f"no count rose beyond the tolerance ({args.tolerance:.0%} + 0.5) against {args.check}",
              file=sys.stderr)
    else:
        for path in args.paths:
            print(json.dumps(parse(path)))


if __name__ == "__main__":
    main()
