#!/usr/bin/env python3
"""Which of a running binary's own pages are resident (Benchmarks/memory.sh): by ELF section, and the code pages by
the Swift module (or C/C++ library code) of the function at each page.

    binary_residency.py --pid PID [--top 12]

Reads /proc/PID/maps for the mappings of the process's executable, their pages' present bits from /proc/PID/pagemap,
the section headers with `readelf -SW` and the function symbols with `nm`. It also counts how the resident code pages
fall into aligned 64 KiB windows: a read fault on a file mapping maps the pages around it that the page cache holds
(the kernel's fault-around, 64 KiB by default), so a window with one function that ran is usually resident whole.
Prints markdown.
"""
import argparse
import bisect
import collections
import os
import re
import struct
import subprocess

PAGE = 4096
WINDOW_PAGES = 16
SWIFT_SYMBOL = re.compile(r"^\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)")


def mappings(pid, path):
    rows = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == path:
                start, end = (int(value, 16) for value in parts[0].split("-"))
                rows.append((start, end, int(parts[2], 16), parts[1]))
    return rows


def sections(path):
    rows = []
    output = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("[") or "]" not in line:
            continue
        fields = line.split("]", 1)[1].split()
        try:
            name, address, size = fields[0], int(fields[2], 16), int(fields[4], 16)
        except (IndexError, ValueError):
            continue
        if address and size:
            rows.append((address, address + size, name))
    return sorted(rows)


def functions(path):
    rows = []
    output = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    for line in output.splitlines():
        fields = line.split(maxsplit=2)
        if len(fields) == 3 and fields[1] in "tTwW":
            rows.append((int(fields[0], 16), fields[2]))
    rows.sort()
    return [address for address, _ in rows], [name for _, name in rows]


def owner(name):
    match = SWIFT_SYMBOL.match(name)
    if match and len(match.group(2)) >= int(match.group(1)):
        return match.group(2)[: int(match.group(1))]
    if name.startswith("$s"):
        return "Swift standard library"
    if name.startswith(("_ZN5swift", "swift_", "_swift")):
        return "Swift runtime"
    return "C/C++ and other"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    path = os.readlink(f"/proc/{args.pid}/exe")
    maps = mappings(args.pid, path)
    if not maps:
        print(f"no mapping of {path} in process {args.pid}")
        return
    load_base = maps[0][0] - maps[0][2]
    section_rows = sections(path)
    section_starts = [start for start, _, _ in section_rows]
    addresses, names = functions(path)
    by_section = collections.Counter()
    size_of_section = {name: end - start for start, end, name in section_rows}
    by_module = collections.Counter()
    windows = collections.Counter()
    with open(f"/proc/{args.pid}/pagemap", "rb") as pagemap:
        for start, end, _, _ in maps:
            count = (end - start) // PAGE
            pagemap.seek(start // PAGE * 8)
            entries = pagemap.read(count * 8)
            for index in range(count):
                if not struct.unpack_from("<Q", entries, index * 8)[0] >> 63:
                    continue
                address = start + index * PAGE - load_base
                position = bisect.bisect_right(section_starts, address + PAGE - 1) - 1
                section = "(between sections)"
                if position >= 0 and address < section_rows[position][1]:
                    section = section_rows[position][2]
                by_section[section] += PAGE // 1024
                if section.startswith(".text"):
                    windows[(start // PAGE + index) // WINDOW_PAGES] += 1
                    found = bisect.bisect_right(addresses, address + PAGE // 2) - 1
                    by_module[owner(names[found]) if found >= 0 else "?"] += PAGE // 1024
    total = sum(by_section.values())
    print(f"**{os.path.basename(path)}**: {total / 1024:.1f} MiB of its own pages resident")
    print()
    print("| section | resident KiB | of KiB |")
    print("|---|---:|---:|")
    for name, kib in by_section.most_common(args.top):
        print(f"| {name} | {kib} | {size_of_section.get(name, 0) // 1024} |")
    print()
    print("| code pages by the function's module | KiB |")
    print("|---|---:|")
    for name, kib in by_module.most_common(args.top):
        print(f"| {name} | {kib} |")
    full = sum(1 for pages in windows.values() if pages == WINDOW_PAGES)
    print()
    print(f"Resident code in {len(windows)} aligned 64 KiB windows, {full} of them resident whole (fault-around).")


if __name__ == "__main__":
    main()
