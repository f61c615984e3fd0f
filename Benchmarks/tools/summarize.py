#!/usr/bin/env python3
"""summarize.py OUT_DIR TOOLS_DIR : markdown tables for Benchmarks/run.sh (medians over repetitions), the ratios
against nginx / wrk and the engine's goals (Benchmarks/README.md); last line `SUMMARY ...`. Parsers (wrk output, RSS
summaries) come from tools/benchlib.py."""
import glob
import json
import os
import re
import sys

out_dir, tools = sys.argv[1], sys.argv[2]
sys.dont_write_bytecode = True   # leave no __pycache__ in the repository
sys.path.insert(0, tools)
import benchlib  # noqa: E402  (Benchmarks/tools/benchlib.py)

med, fmt = benchlib.med, benchlib.fmt
tp = os.path.join(out_dir, "tp")


def kv(path):
    if not os.path.exists(path):
        return {}
    return dict(x.split("=", 1) for x in open(path).read().split())


def ticks_us(cpu, requests):
    if not requests or "server_ticks" not in cpu:
        return None
    return int(cpu["server_ticks"]) / float(cpu.get("clk_tck", 100)) * 1e6 / requests


runs = {}   # (client, target) -> list of dicts
for p in sorted(glob.glob(os.path.join(tp, "wrk_*_r*.txt"))):
    m = re.fullmatch(r"wrk_(.+)_r(\d+)\.txt", os.path.basename(p))
    r = benchlib.parse_wrk(p)
    cpu, ru = kv(p[:-4] + ".cpu"), kv(p[:-4] + ".rusage")
    r["rep"] = int(m.group(2))
    r["server_cpu_us"] = ticks_us(cpu, r["requests"])
    r["client_cpu_us"] = int(ru["child_cpu_us"]) / r["requests"] if ru and r["requests"] else None
    r["errors"] = r["non2xx"] + r["socket_errors"]
    r.update({k: float(v) for k, v in cpu.items() if k.endswith("_pct")})
    runs.setdefault(("wrk", m.group(1)), []).append(r)
for p in sorted(glob.glob(os.path.join(tp, "cb_*_r*.json"))):
    m = re.fullmatch(r"cb_(.+)_r(\d+)\.json", os.path.basename(p))
    j = json.load(open(p))
    cpu = kv(p[:-5] + ".cpu")
    r = {"rep": int(m.group(2)), "rps": j["rps"], "p50_us": j["p50_us"], "p99_us": j["p99_us"],
         "requests": j["requests"], "client_cpu_us": j["cpu_us_per_req"],
         "server_cpu_us": ticks_us(cpu, j["requests"]), "errors": j["errors"] + j["non200"]}
    r.update({k: float(v) for k, v in cpu.items() if k.endswith("_pct")})
    runs.setdefault(("ClientBench", m.group(1)), []).append(r)


def agg(key):
    rs = runs.get(key, [])
    rps = [r["rps"] for r in rs if r["rps"] is not None]
    return {
        "n": len(rs), "rps": med(rps), "min": min(rps, default=None), "max": max(rps, default=None),
        "p50": med([r["p50_us"] for r in rs]), "p99": med([r["p99_us"] for r in rs]),
        "scpu": med([r["server_cpu_us"] for r in rs]), "ccpu": med([r["client_cpu_us"] for r in rs]),
        "b0": med([r.get("cpu0_busy_pct") for r in rs]), "b1": med([r.get("cpu1_busy_pct") for r in rs]),
        "foreign": max((r.get("foreign_pct", 0) for r in rs), default=None),
        "errors": sum(r["errors"] for r in rs), "all": rps,
        "by_rep": {r["rep"]: r["rps"] for r in rs},
    }


def us(x):
    return "-" if x is None else f"{x:,.0f} µs"


def cpu(x):
    return "-" if x is None else f"{x:.1f} µs"


def ratio(a, b):
    return a / b if a and b else None


def per_rep_ratios(a, b):
    return [a["by_rep"][k] / b["by_rep"][k] for k in sorted(a["by_rep"]) if k in b["by_rep"] and b["by_rep"][k]]


lines = []
A = {k: agg(k) for k in runs}
ng, hs = A.get(("wrk", "nginx")), A.get(("wrk", "hello-server"))
cbn, cbh = A.get(("ClientBench", "nginx")), A.get(("ClientBench", "hello-server"))

lines += ["### Server: wrk -t1 -c50 → server (server on CPU 1, wrk on CPU 0)", "",
          "| server | req/s median (min–max) | p50 | p99 | server CPU/req | wrk CPU/req | busy CPU0/CPU1 | "
          "other load (max) | errors |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for name, a in (("nginx `return 200`", ng), ("hello-server (1 thread)", hs)):
    if a:
        lines.append(f"| {name} | {fmt(a['rps'])} ({fmt(a['min'])}–{fmt(a['max'])}) | {us(a['p50'])} | {us(a['p99'])} | "
                     f"{cpu(a['scpu'])} | {cpu(a['ccpu'])} | {fmt(a['b0'])}% / {fmt(a['b1'])}% | "
                     f"{fmt(a['foreign'])}% | {a['errors']} |")
hello_ratio = ratio(hs and hs["rps"], ng and ng["rps"])
if hello_ratio:
    rr = ", ".join(f"{x:.2f}" for x in per_rep_ratios(hs, ng))
    lines += ["", f"hello-server / nginx: req/s **{hello_ratio:.2f}×** (per repetition: {rr}); "
                  f"server CPU per request {hs['scpu'] / ng['scpu']:.2f}× nginx's; "
                  f"p50 {hs['p50'] / ng['p50']:.2f}×, p99 {hs['p99'] / ng['p99']:.2f}×."]

lines += ["", "### Client: load generator on CPU 0 → server on CPU 1, 50 keep-alive connections", "",
          "| client → server | req/s median (min–max) | p50 | p99 | client CPU/req | server CPU/req | busy CPU0/CPU1 | "
          "other load (max) | errors |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for name, a in (("wrk → nginx", ng), ("ClientBench (HTTPClient) → nginx", cbn),
                ("wrk → hello-server", hs), ("ClientBench (HTTPClient) → hello-server", cbh)):
    if a:
        lines.append(f"| {name} | {fmt(a['rps'])} ({fmt(a['min'])}–{fmt(a['max'])}) | {us(a['p50'])} | {us(a['p99'])} | "
                     f"{cpu(a['ccpu'])} | {cpu(a['scpu'])} | {fmt(a['b0'])}% / {fmt(a['b1'])}% | "
                     f"{fmt(a['foreign'])}% | {a['errors']} |")
client_ratio = ratio(cbn and cbn["rps"], ng and ng["rps"])
if client_ratio:
    rr = ", ".join(f"{x:.2f}" for x in per_rep_ratios(cbn, ng))
    lines += ["", f"ClientBench / wrk against nginx: req/s **{client_ratio:.2f}×** (per repetition: {rr}); "
                  f"client CPU per request {cbn['ccpu'] / ng['ccpu']:.2f}× wrk's."]

mem = {}
mdir = os.path.join(out_dir, "memory")
if os.path.isdir(mdir):
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        benchlib.summarize_memory(mdir)
    table = [ln for ln in buf.getvalue().splitlines() if not ln.startswith("SUMMARY")]
    lines += ["", f"### Memory: RSS of the process tree, idle and with idle keep-alive connections", ""] + table
    for name in ("nginx", "hello-server"):
        d = os.path.join(mdir, name)
        if os.path.exists(os.path.join(d, "conns.json")):
            i, c = json.load(open(os.path.join(d, "idle.json"))), json.load(open(os.path.join(d, "conns.json")))
            cl = json.load(open(os.path.join(d, "client.json")))
            mem[name] = {"idle_mib": i["rss_kb"] / 1024, "per_conn_kib": (c["rss_kb"] - i["rss_kb"]) / max(1, cl["opened"]),
                         "opened": cl["opened"], "closed": cl["closed_by_server_during_hold"]}
    for name in ("nginx", "hello-server"):
        f = os.path.join(tp, f"rss_after_load_{name}.json")
        if os.path.exists(f):
            lines.append(f"\nRSS of {name} after the throughput runs: {json.load(open(f))['rss_kb'] / 1024:.1f} MiB")

lines += ["", "### Goals (Benchmarks/README.md)", "", "| goal | measured | met? |", "|---|---:|---|"]


QUIET = float(os.environ.get("QUIET_PCT", "5"))


def goal(text, value, ok, rows=()):
    verdict = '-' if ok is None else ('yes' if ok else '**no**')
    other = max((a["foreign"] or 0 for a in rows if a), default=0)
    if other > QUIET:   # common.sh's guard saw other processes using the CPUs during these runs
        verdict += f" (suspect: other load up to {other:.0f}% of a CPU; compare CPU/req instead)"
    lines.append(f"| {text} | {value} | {verdict} |")


goal("hello-server req/s ≥ 1.0× nginx (same run)", "-" if hello_ratio is None else f"{hello_ratio:.2f}×",
     None if hello_ratio is None else hello_ratio >= 1.0, (ng, hs))
goal("HTTPClient req/s ≥ 0.7× wrk (same nginx, same run)", "-" if client_ratio is None else f"{client_ratio:.2f}×",
     None if client_ratio is None else client_ratio >= 0.7, (ng, cbn))
h = mem.get("hello-server")
goal("hello-server idle RSS ≤ 20 MiB", "-" if not h else f"{h['idle_mib']:.1f} MiB (nginx {mem.get('nginx', {}).get('idle_mib', 0):.1f})",
     None if not h else h["idle_mib"] <= 20)
goal("hello-server RSS per idle keep-alive conn ≤ 2 KiB", "-" if not h else
     f"{h['per_conn_kib']:.1f} KiB (nginx {mem.get('nginx', {}).get('per_conn_kib', 0):.1f})",
     None if not h else h["per_conn_kib"] <= 2)
print("\n".join(lines))
idle_s = "-" if not h else f"{h['idle_mib']:.1f}MiB"
conn_s = "-" if not h else f"{h['per_conn_kib']:.1f}KiB"
hr_s = "-" if hello_ratio is None else f"{hello_ratio:.2f}"
cr_s = "-" if client_ratio is None else f"{client_ratio:.2f}"
print(f"SUMMARY moya hello/nginx={hr_s} client/wrk={cr_s} nginx_rps={fmt(ng and ng['rps'])} "
      f"hello_rps={fmt(hs and hs['rps'])} clientbench_rps={fmt(cbn and cbn['rps'])} "
      f"hello_idle_rss={idle_s} hello_per_conn={conn_s}")
