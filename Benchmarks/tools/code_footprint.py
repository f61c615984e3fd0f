#!/usr/bin/env python3
"""The code a request runs, from a callgrind dump written with --dump-instr=yes (counts.sh FOOTPRINT=1).

    code_footprint.py DUMP REQUESTS [--name NAME] [--top K]

Counts the distinct instructions, and the distinct 64-byte cache lines holding them, that ran at least once per two
requests on average in DUMP (a dump covering REQUESTS requests), by object file and, in a Swift binary, by module (the
module of the mangled function name); with --top, the functions holding the most lines (demangled when `swift` is on
PATH). Prints one tab-separated summary line first: NAME, lines, KiB, instructions.

This is the code that must be brought back into the instruction cache when a request arrives on a loop that slept
(one request at a time, `-c1`): instruction counts say how much runs, this says how much distinct code it runs over.
"""
import argparse
import collections
import re
import shutil
import subprocess

LINE = 64


def parse(path):
    """Executions per (object, address) of self cost, and the function owning each address."""
    executions = collections.Counter()
    owner = {}
    names = {"ob": {}, "fn": {}}
    obj = function = None
    address = 0
    call_line_next = False
    with open(path) as dump:
        for raw in dump:
            line = raw.rstrip("\n")
            if not line:
                continue
            key, _, rest = line.partition("=")
            if key in ("ob", "cob", "fn", "cfn") and rest.startswith("("):
                match = re.match(r"\((\d+)\)(?: (.*))?", rest)
                table = names["ob" if key.endswith("ob") else "fn"]
                if match.group(2):
                    table[match.group(1)] = match.group(2)
                if key == "ob":
                    obj = table[match.group(1)]
                elif key == "fn":
                    function = table[match.group(1)]
                continue
            if key == "calls":
                call_line_next = True
                continue
            first = line[0]
            if not (first.isdigit() or first in "+-*"):
                continue
            parts = line.split()
            token = parts[0]
            if token.startswith("+"):
                address += int(token[1:], 0)
            elif token.startswith("-"):
                address -= int(token[1:], 0)
            elif token != "*":
                address = int(token, 0)
            if call_line_next:
                # The inclusive cost of a call made from this address: not this address's own executions.
                call_line_next = False
                continue
            if len(parts) >= 3:
                executions[(obj, address)] += int(parts[2])
                owner[(obj, address)] = function
    return executions, owner


def module_of(function):
    match = re.match(r"^\$s(\d+)([A-Za-z_]\w*)", function or "")
    return match.group(2)[: int(match.group(1))] if match else "(other)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dump")
    parser.add_argument("requests", type=int)
    parser.add_argument("--name", default="")
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args()
    executions, owner = parse(args.dump)
    hot = [key for key, count in executions.items() if count * 2 >= args.requests]
    lines = {(obj, address // LINE) for obj, address in hot}
    instructions_by_object = collections.Counter(obj for obj, _ in hot)
    lines_by_object = collections.Counter(obj for obj, _ in lines)
    print(f"{args.name}\t{len(lines)}\t{len(lines) * LINE / 1024:.1f}\t{len(hot)}")
    for obj, count in lines_by_object.most_common(6):
        print(f"  {count:6d} lines {instructions_by_object[obj]:6d} instructions  {obj}")
    by_module = collections.Counter()
    by_function = collections.Counter()
    counted = set()
    for obj, address in sorted(hot):
        if (obj, address // LINE) in counted:
            continue
        counted.add((obj, address // LINE))
        function = owner.get((obj, address)) or ""
        if function.startswith("$s"):
            by_module[module_of(function)] += 1
            by_function[function] += 1
    if by_module:
        print("  Swift modules (lines): " + ", ".join(f"{m} {c}" for m, c in by_module.most_common(12)))
    if args.top:
        top = by_function.most_common(args.top)
        shown = [f for f, _ in top]
        if shutil.which("swift"):
            result = subprocess.run(
                ["swift", "demangle", "--simplified", "--compact"], input="\n".join(shown),
                capture_output=True, text=True)
            if result.returncode == 0 and len(result.stdout.splitlines()) == len(shown):
                shown = result.stdout.splitlines()
        for (_, count), name in zip(top, shown):
            print(f"  {count:5d}  {name[:140]}")


if __name__ == "__main__":
    main()
