#!/usr/bin/env python3
"""Self instructions per request by layer, from two callgrind dumps of Benchmarks/counts.sh (N and 2N requests).

    callgrind_layers.py --per-request N DUMP_N DUMP_2N

A function's layer is its Swift module (from the mangled name: NetCore, HTTPWire, HTTPServer, HTTPClient, Moya,
Gateway, ...) or, for other symbols, the library it is in (the Swift runtime and standard library, Swift
Concurrency, libc's malloc/free and memcpy, OpenSSL, ...). Prints a markdown table, largest first.
"""
import argparse
import collections
import re

NAME_REF = re.compile(r"^\((\d+)\)(?: (.*))?$")
SWIFT_MODULE = re.compile(r"^\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)")


def resolve(table, text):
    match = NAME_REF.match(text)
    if not match:
        return text
    ident, name = match.groups()
    if name is not None:
        table[ident] = name
        return name
    return table.get(ident, "")


def layer(function, obj):
    match = SWIFT_MODULE.match(function)
    if match:
        length = int(match.group(1))
        module = match.group(2)[:length]
        if len(module) == length:
            return module
    base = obj.rsplit("/", 1)[-1]
    if function.startswith("$s"):
        return "Swift standard library (generic code, " + base + ")"
    if base.startswith("libswift_Concurrency"):
        return "Swift Concurrency runtime"
    if base.startswith("libswiftCore"):
        return "Swift runtime (retain/release, metadata, casts)"
    if base.startswith("libc.so"):
        if function.startswith(("malloc", "free", "_int_", "cfree", "tcache", "__libc_malloc", "__libc_free")):
            return "libc malloc/free"
        if "mem" in function or "str" in function:
            return "libc memcpy/memmove/memcmp"
        return "libc (syscall wrappers, other)"
    return base or "?"


def self_costs(path):
    files, functions, objects = {}, {}, {}
    costs = collections.Counter()
    fn = None
    obj = ""
    fn_obj = ""
    skip_next = False
    with open(path, errors="replace") as dump:
        for line in dump:
            if line.startswith("ob="):
                obj = resolve(objects, line[3:].strip())
            elif line.startswith("fn="):
                fn = resolve(functions, line[3:].strip())
                fn_obj = obj
            elif line.startswith(("cfn=", "cfi=", "cfl=", "cob=")):
                if line.startswith("cfn="):
                    resolve(functions, line[4:].strip())
                elif line.startswith("cob="):
                    resolve(objects, line[4:].strip())
                else:
                    resolve(files, line[4:].strip())
            elif line.startswith("calls="):
                skip_next = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2 and fn is not None:
                    costs[(fn, fn_obj)] += int(parts[1])
            elif line.startswith(("fl=", "fi=", "fe=")):
                resolve(files, line[3:].strip())
    return costs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-request", type=int, required=True)
    parser.add_argument("dumps", nargs=2)
    args = parser.parse_args()
    first, second = (self_costs(path) for path in args.dumps)
    layers = collections.Counter()
    for key in set(first) | set(second):
        layers[layer(*key)] += second[key] - first[key]
    total = sum(layers.values())
    print("| layer | instructions per request | share |")
    print("|---|---:|---:|")
    for name, cost in layers.most_common():
        per_request = cost / args.per_request
        if abs(per_request) < 50:
            continue
        print(f"| {name} | {per_request:,.0f} | {cost / total:.0%} |")
    print(f"| all | {total / args.per_request:,.0f} | |")


if __name__ == "__main__":
    main()
