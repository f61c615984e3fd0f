#!/usr/bin/env python3
"""Parsers and summaries for the benchmark scripts (Python standard library only).

  benchlib.py wrk FILE              JSON of one `wrk --latency` run: rps, p50/p75/p90/p99 (µs), requests, errors
  benchlib.py h2load FILE           JSON of one h2load run: rps, mean/max time per request (µs), succeeded, failed
  benchlib.py rss PID               JSON: RSS and PSS (KiB) of PID and its descendants, threads per process
  benchlib.py foreign PID           CPU ticks used so far by every process outside PID's tree (the machine's other load)
  benchlib.py summarize-throughput DIR   gateway.sh's table (stdout) and DIR/summary.tsv, medians over repetitions
  benchlib.py summarize-memory DIR  run.sh's memory table (stdout) and DIR/summary.tsv

Scripts that need the parsers import this file (sys.path gets Benchmarks/tools).
"""
import glob
import json
import os
import re
import statistics
import sys

_UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6}


def duration_us(text):
    """`812.00us`, `1.20ms`, `2s` -> microseconds."""
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * _UNITS_US[m.group(2)]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=0):
    return "-" if value is None else f"{value:,.{digits}f}"


def _us(value):
    return "-" if value is None else f"{value:,.1f} µs"


def parse_wrk(path):
    text = open(path).read()
    out = {"rps": None, "requests": None, "non2xx": 0, "socket_errors": 0}
    if m := re.search(r"Requests/sec:\s+([\d.]+)", text):
        out["rps"] = float(m.group(1))
    if m := re.search(r"(\d+) requests in", text):
        out["requests"] = int(m.group(1))
    for pct in ("50", "75", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", text, re.M)
        out[f"p{pct}_us"] = duration_us(m.group(1)) if m else None
    if m := re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text):
        out["non2xx"] = int(m.group(1))
    if m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text):
        out["socket_errors"] = sum(int(x) for x in m.groups())
    return out


def parse_h2load(path):
    text = open(path).read()
    out = {"rps": None, "mean_us": None, "max_us": None, "succeeded": None, "failed": None, "proto": None,
           "tls": None, "cipher": None}
    if m := re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", text):
        out["rps"] = float(m.group(1))
    if m := re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed", text):
        out["succeeded"], out["failed"] = int(m.group(1)), int(m.group(2))
    if m := re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text):
        out["max_us"], out["mean_us"] = duration_us(m.group(2)), duration_us(m.group(3))
    for key, pattern in (("proto", r"Application protocol: (\S+)"), ("tls", r"TLS Protocol: (\S+)"),
                         ("cipher", r"Cipher: (\S+)")):
        if m := re.search(pattern, text):
            out[key] = m.group(1)
    return out


def parse_cpu(path, requests):
    """A run's `.cpu` sidecar (`clk_tck=100 proxy_ticks=N upstream_ticks=N cpu0_busy_pct=N ... foreign_pct=N`) ->
    CPU µs per request of the proxy and of the upstream, and the busy/other-load percentages."""
    out = {"proxy_cpu_us": None, "upstream_cpu_us": None, "cpu0_busy_pct": None, "cpu1_busy_pct": None,
           "foreign_pct": None}
    if not os.path.exists(path) or not requests:
        return out
    fields = dict(item.split("=", 1) for item in open(path).read().split())
    tick = float(fields.get("clk_tck", 100))
    for key, name in (("proxy_ticks", "proxy_cpu_us"), ("upstream_ticks", "upstream_cpu_us")):
        if fields.get(key, "-") != "-":
            out[name] = int(fields[key]) / tick * 1e6 / requests
    for key, value in fields.items():
        if key.endswith("_busy_pct") or key == "foreign_pct":
            out[key] = float(value)
    return out


def _children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        return []
    return kids


def descendants(pid):
    out = []
    for kid in _children(pid):
        out += [kid] + descendants(kid)
    return out


def _memory(pid):
    rss = pss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    comm = open(f"/proc/{pid}/comm").read().strip()
    return {"pid": pid, "comm": comm, "rss_kb": rss, "pss_kb": pss, "threads": len(os.listdir(f"/proc/{pid}/task"))}


def rss_tree(pid):
    procs = [_memory(p) for p in [pid] + descendants(pid)]
    return {"rss_kb": sum(p["rss_kb"] for p in procs), "pss_kb": sum(p["pss_kb"] for p in procs),
            "max_proc_rss_kb": max(p["rss_kb"] for p in procs), "procs": procs}


def foreign_ticks(root):
    """utime + stime + cutime + cstime of every process outside ROOT's tree (and this one), kernel threads left out:
    how it grows over a run is the CPU other work on the machine took meanwhile."""
    ours = {root, os.getpid()} | set(descendants(root))
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in ours:
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parent = fields[1]
        if entry == "2" or parent == "2" or (parent == "0" and entry != "1"):
            continue   # kthreadd and its kernel threads
        total += sum(int(x) for x in fields[11:15])
    return total


def summarize_throughput(directory):
    """gateway.sh's raw files: <mode>_c<conns>_<target>_r<rep>.txt (wrk) with a .cpu sidecar each."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(directory, "*_c*_*_r*.txt"))):
        m = re.fullmatch(r"(\w+?)_c(\d+)_([\w.-]+)_r(\d+)\.txt", os.path.basename(path))
        if not m:
            continue
        mode, conns, target, _ = m.groups()
        run = parse_wrk(path)
        run.update(parse_cpu(path[:-4] + ".cpu", run["requests"]))
        runs.setdefault((mode, int(conns), target), []).append(run)
    order = ["direct", "nginx", "nginx-twin", "haproxy", "caddy", "varnish", "gw-proxy", "gw-proxy-epoll", "gw-stub",
             "gw-stub-epoll", "caddy-respond"]
    key = lambda k: (k[0] != "pinned", -k[1], order.index(k[2]) if k[2] in order else 99, k[2])
    tsv = ["mode\tconns\ttarget\treps\trps_med\trps_min\trps_max\tp50_us_med\tp99_us_med\tp50_added_us\t"
           "proxy_cpu_us_per_req\tupstream_cpu_us_per_req\tcpu0_busy_pct_med\tcpu1_busy_pct_med\tforeign_pct_max\t"
           "errors_total\trps_all"]
    md = ["| mode | conns | target | req/s median (min–max) | p50 | p99 | p50 added over direct | proxy CPU/req | "
          "upstream CPU/req | busy CPU0 / CPU1 | other load (max) | errors |",
          "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in sorted(runs, key=key):
        mode, conns, target = k
        rs = runs[k]
        rps = [r["rps"] for r in rs if r["rps"] is not None]
        p50, p99 = med([r["p50_us"] for r in rs]), med([r["p99_us"] for r in rs])
        direct = runs.get((mode, conns, "direct"))
        added = p50 - med([r["p50_us"] for r in direct]) if direct and p50 is not None and target != "direct" else None
        pcpu, ucpu = med([r["proxy_cpu_us"] for r in rs]), med([r["upstream_cpu_us"] for r in rs])
        b0, b1 = med([r["cpu0_busy_pct"] for r in rs]), med([r["cpu1_busy_pct"] for r in rs])
        other = max((r["foreign_pct"] for r in rs if r["foreign_pct"] is not None), default=None)
        errors = sum(r["non2xx"] + r["socket_errors"] for r in rs)
        tsv.append("\t".join(str(x) for x in [
            mode, conns, target, len(rs), med(rps), min(rps, default=None), max(rps, default=None), p50, p99, added,
            None if pcpu is None else round(pcpu, 2), None if ucpu is None else round(ucpu, 2), b0, b1, other, errors,
            ",".join(str(x) for x in rps)]))
        md.append(f"| {mode} | {conns} | {target} | {fmt(med(rps))} ({fmt(min(rps, default=None))}–"
                  f"{fmt(max(rps, default=None))}) | {fmt(p50)} µs | {fmt(p99)} µs | "
                  f"{'-' if added is None else f'{added:+.0f} µs'} | {_us(pcpu)} | {_us(ucpu)} | "
                  f"{fmt(b0)}% / {fmt(b1)}% | {'-' if other is None else f'{other:.0f}%'} | {errors} |")
    open(os.path.join(directory, "summary.tsv"), "w").write("\n".join(tsv) + "\n")
    print("\n".join(md))


def summarize_memory(directory):
    """run.sh's memory files: DIR/<server>/{idle,conns,after,client}.json and DIR/<server>/established."""
    names = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(directory, "*", "idle.json")))
    tsv = ["server\tidle_rss_kb\tidle_pss_kb\tconns_rss_kb\tconns_pss_kb\tper_conn_rss_kb\tafter_rss_kb\t"
           "threads_idle\tthreads_conns\topened\testablished\tclosed_by_server"]
    md = ["| process tree | idle RSS | idle PSS | RSS with N idle keep-alive conns | PSS with N | RSS per conn | "
          "RSS after close | threads idle → N | conns held (client / ss) |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        load = lambda f: json.load(open(os.path.join(directory, name, f)))
        idle, conns, after, client = load("idle.json"), load("conns.json"), load("after.json"), load("client.json")
        est_path = os.path.join(directory, name, "established")
        established = int(open(est_path).read().strip()) if os.path.exists(est_path) else None
        per = (conns["rss_kb"] - idle["rss_kb"]) / max(1, client["opened"])
        threads_idle = sum(p["threads"] for p in idle["procs"])
        threads_conns = sum(p["threads"] for p in conns["procs"])
        held = client["opened"] - client["closed_by_server_during_hold"]
        tsv.append("\t".join(str(x) for x in [
            name, idle["rss_kb"], idle["pss_kb"], conns["rss_kb"], conns["pss_kb"], round(per, 2), after["rss_kb"],
            threads_idle, threads_conns, client["opened"], established, client["closed_by_server_during_hold"]]))
        md.append(f"| {name} ({len(idle['procs'])} proc) | {idle['rss_kb'] / 1024:.1f} MiB | "
                  f"{idle['pss_kb'] / 1024:.1f} MiB | {conns['rss_kb'] / 1024:.1f} MiB | "
                  f"{conns['pss_kb'] / 1024:.1f} MiB | {per:.1f} KiB | {after['rss_kb'] / 1024:.1f} MiB | "
                  f"{threads_idle} → {threads_conns} | {held} / {established} |")
    open(os.path.join(directory, "summary.tsv"), "w").write("\n".join(tsv) + "\n")
    print("\n".join(md))


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    command, argument = sys.argv[1], sys.argv[2]
    if command == "wrk":
        print(json.dumps(parse_wrk(argument)))
    elif command == "h2load":
        print(json.dumps(parse_h2load(argument)))
    elif command == "rss":
        print(json.dumps(rss_tree(int(argument))))
    elif command == "foreign":
        print(foreign_ticks(int(argument)))
    elif command == "summarize-throughput":
        summarize_throughput(argument)
    elif command == "summarize-memory":
        summarize_memory(argument)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
