#!/usr/bin/env python3
"""The link order of scripts/build-release.sh's profile-guided build: one symbol per line, for lld's
--symbol-ordering-file (each function is in a section of its own, so lld lays them out in this order).

    llvm-profdata show --all-functions --counts PROFILE | pgo-order.py [--start-up CALLGRIND_OUT] > ORDER

Three groups, each laid out contiguously:
  1. the functions the training ran often (the hot path), the most often run first: the code a request runs sits on
     as few pages as it can;
  2. every other function that ran while a gateway started and answered its first requests (--start-up: a callgrind
     output of that start, scripts/pgo-trace.sh). Unlike the profile it names the toolchain's code too (the Swift
     runtime, the standard library, Foundation), which is linked statically and never instrumented. An idle gateway's
     resident code is mostly these pages: a read fault maps the 64 KiB around it (fault-around), so start-up code
     scattered among code that never runs keeps far more pages resident than it uses;
  3. the rest of what the training ran, the most often run first.
A local function's profile name is prefixed with its object's path and a semicolon; its symbol is not.
"""
import argparse
import re
import sys

HOT_COUNT = 1000
NAME_REF = re.compile(r"^\((\d+)\)(?: (.*))?$")


def profile_functions(lines):
    """(most counts of any counter, name) of every function the profile saw run."""
    functions = []
    name = None
    for line in lines:
        if line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":"):
            name = line.strip()[:-1].rsplit(";", 1)[-1]
        elif line.startswith("    Block counts: [") and name:
            values = line.strip()[len("Block counts: ["):-1]
            most = max((int(value) for value in values.split(",") if value.strip()), default=0)
            if most > 0:
                functions.append((most, name))
            name = None
    functions.sort(key=lambda function: (-function[0], function[1]))
    return functions


def start_up_functions(path):
    """The functions a callgrind output (--demangle=no) saw run, in the order it names them. Every object's: the
    linker ignores the names its output does not define (valgrind does not always attribute the binary's code to the
    binary's object, so its functions are not picked by object)."""
    names = {}
    found, seen = [], set()
    with open(path, errors="replace") as dump:
        for line in dump:
            if line.startswith(("fn=", "cfn=")):
                function = resolve(names, line[line.index("=") + 1:].strip()).split("'")[0]
                if function and function not in seen:
                    seen.add(function)
                    found.append(function)
    return found


def resolve(table, text):
    """A callgrind name, given in full the first time and by its number after (name compression)."""
    match = NAME_REF.match(text)
    if not match:
        return text
    number, name = match.groups()
    if name is not None:
        table[number] = name
        return name
    return table.get(number, "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-up", help="callgrind output of a traced start (scripts/pgo-trace.sh)")
    args = parser.parse_args()
    functions = profile_functions(sys.stdin)
    hot = [name for count, name in functions if count >= HOT_COUNT]
    rest = [name for count, name in functions if count < HOT_COUNT]
    start_up = start_up_functions(args.start_up) if args.start_up else []
    listed = set()
    for name in hot + start_up + rest:
        if name and name not in listed:
            listed.add(name)
            print(name)


if __name__ == "__main__":
    main()
