#!/usr/bin/env python3
"""Where a process's resident memory is (Benchmarks/memory.sh): /proc/PID/smaps summed by mapping name.

    smaps_breakdown.py --pid PID [--top 12] [--name LABEL]

Prints markdown: RSS split into anonymous memory (heap and malloc arenas, thread stacks, other anonymous mappings, the
private dirty pages of file mappings: the libraries' relocated data) and file-backed pages (clean pages of the binary
and of each shared library: their code and read-only data that the process touched), then the largest mappings.
"""
import argparse
import collections
import os
import re

MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")


def read(pid):
    rows = []
    current = None
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            if MAPPING.match(line):
                parts = line.split()
                start, end = (int(value, 16) for value in parts[0].split("-"))
                current = {"name": parts[5] if len(parts) > 5 else "", "perm": parts[1], "size": (end - start) // 1024}
                rows.append(current)
            else:
                key, _, value = line.partition(":")
                if key in ("Rss", "Anonymous", "Private_Dirty", "Shared_Clean", "Private_Clean"):
                    current[key] = int(value.split()[0])
    return rows


def kind(row):
    name = row["name"]
    if name == "[heap]":
        return "heap ([heap])"
    if name == "[stack]":
        return "main thread stack"
    if name.startswith("["):
        return "kernel ([vdso], [vvar])"
    if name == "":
        # Thread stacks are 8 MiB mappings (plus a guard page); malloc arenas reserve 64 MiB (132 KiB at first).
        if row["size"] in (8192, 8196):
            return "thread stacks"
        return "other anonymous (arenas, Swift allocations, buffers)"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid", required=True)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--name", default="process")
    args = parser.parse_args()
    rows = read(args.pid)
    total = sum(row.get("Rss", 0) for row in rows)
    anon = collections.Counter()
    files = collections.Counter()
    relocated = 0
    for row in rows:
        rss = row.get("Rss", 0)
        if not rss:
            continue
        group = kind(row)
        if group:
            anon[group] += rss
        else:
            dirty = row.get("Private_Dirty", 0)
            relocated += dirty
            files[os.path.basename(row["name"])] += rss - dirty
    threads = len(os.listdir(f"/proc/{args.pid}/task"))
    anon_total = sum(anon.values()) + relocated
    print(f"**{args.name}**: RSS {total / 1024:.1f} MiB = anonymous {anon_total / 1024:.1f} MiB + file-backed "
          f"{sum(files.values()) / 1024:.1f} MiB; {threads} threads")
    print()
    print("| where | KiB |")
    print("|---|---:|")
    for group, kib in anon.most_common():
        print(f"| {group} | {kib} |")
    print(f"| relocated data of the binary and libraries (private dirty file pages) | {relocated} |")
    shown = files.most_common(args.top)
    for name, kib in shown:
        print(f"| file: {name} | {kib} |")
    rest = sum(files.values()) - sum(kib for _, kib in shown)
    print(f"| file: {len(files) - len(shown)} other mappings | {rest} |")


if __name__ == "__main__":
    main()
