#!/usr/bin/env bash
# One table of ratios, ours against nginx/wrk (and against HAProxy and Caddy where they do the same job), from every
# measurement, with the conditions. Needs nothing beside the repository: the peers come from apt (common.sh's `need`
# installs what is missing when run as root, Benchmarks/install.sh all of them at once) and their configurations
# from Benchmarks/conf/.
#
#   1. build release once (hello-server, ClientBench; moya-gateway as deploy/ ships it: scripts/build-release.sh --static-swift-stdlib)
#   2. run.sh      hello-server vs nginx `return 200` (wrk), ClientBench vs wrk, memory        -> $RUN_DIR/moya
#   3. gateway.sh  moya-gateway proxy (io_uring on and off) vs nginx `proxy_pass`, HAProxy and Caddy `reverse_proxy`; stub mode vs nginx
#                  `return 200` and Caddy `respond` (wrk)                                       -> $RUN_DIR/proxy
#   4. h2.sh       moya-gateway (io_uring on and off) over TLS, h2 -c10 -m10 and HTTP/1.1, vs nginx keepalive 64/256
#                                                                                               -> $RUN_DIR/h2
#   5. gzip.sh     gzip cost per request and per KiB vs nginx gzip level 1                    -> $RUN_DIR/gzip
#   6. coalesce.sh 100 concurrent identical GETs through a coalescing route vs the upstream delay -> $RUN_DIR/coalesce
#   7. layers.sh   ALONE=1: nginx proxy_pass, the engine and moya-gateway (io_uring on and off) each alone on CPU 1 (upstream on CPU 0): the
#                  CPU per proxied request from CPU 1's busy time                               -> $RUN_DIR/layers
#
# The proxied rows of gateway.sh bill CPU per process while the upstream shares CPU 1, which bills part of the gateway's
# time to the upstream (Benchmarks/README.md, session 20): the CPU ratio to quote for proxying is layers.sh's.
#
# Every script keeps its own pinning (servers on CPU 1, load on CPU 0), bounds and cleanup; this one only sets their
# durations, collects their raw files and prints the table. Each measurement's own tables are in its log
# ($RUN_DIR/logs/*.out).
#
# Env: DURATION=5 (s, wrk/ClientBench runs)  NREQ=10000 (h2load requests per run, ≤ 1000 per connection)  REPS=3
#      ONLY="run gateway h2 gzip coalesce layers" (subset)  SKIP_BUILD=0  RUN_DIR=/tmp/moyabench-table
# A quick run (a few minutes): DURATION=2 NREQ=5000 REPS=1 Benchmarks/table.sh
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
HERE="$ROOT/Benchmarks"
DURATION="${DURATION:-5}"
NREQ="${NREQ:-10000}"
REPS="${REPS:-3}"
ONLY="${ONLY:-run gateway h2 gzip coalesce layers}"
RUN_DIR="${RUN_DIR:-/tmp/moyabench-table}"
PY=/usr/bin/python3
mkdir -p "$RUN_DIR/logs"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

cpu_model=$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    log "building release once: hello-server, ClientBench, and the shipped moya-gateway (scripts/build-release.sh)"
    (cd "$ROOT" && swift build -c release --product hello-server >&2 && swift build -c release --product ClientBench >&2 &&
        scripts/build-release.sh --static-swift-stdlib >/dev/null)
fi

has() { [[ " $ONLY " == *" $1 "* ]]; }
step() {   # step NAME CMD... : run one measurement, its output in $RUN_DIR/logs/NAME.out; a failure is reported, not fatal
    local name=$1; shift
    log "running $name"
    if "$@" >"$RUN_DIR/logs/$name.out" 2>"$RUN_DIR/logs/$name.err"; then
        log "$name done"
    else
        log "$name FAILED (exit $?); see $RUN_DIR/logs/$name.err"
    fi
}
has run && step run env SKIP_BUILD=1 REPS="$REPS" DURATION="$DURATION" RUN_DIR="$RUN_DIR/moya" "$HERE/run.sh"
has gateway && step gateway env SKIP_BUILD=1 REPS="$REPS" DURATION="${DURATION}s" RUN_DIR="$RUN_DIR/proxy" \
    "$HERE/gateway.sh"
has h2 && step h2 env SKIP_BUILD=1 REPS="$REPS" NREQ="$NREQ" RUN_DIR="$RUN_DIR/h2" "$HERE/h2.sh"
has gzip && step gzip env SKIP_BUILD=1 REPS="$REPS" DURATION="$DURATION" RUN_DIR="$RUN_DIR/gzip" "$HERE/gzip.sh"
has coalesce && step coalesce env SKIP_BUILD=1 REPS="$REPS" RUN_DIR="$RUN_DIR/coalesce" "$HERE/coalesce.sh"
has layers && step layers env SKIP_BUILD=1 ALONE=1 REPS="$REPS" DURATION="$DURATION" RUN_DIR="$RUN_DIR/layers" \
    "$HERE/layers.sh"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

versions="nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), HAProxy $(haproxy -v 2>/dev/null | awk 'NR == 1 {print $3}'),"
versions+=" Caddy $(caddy version 2>/dev/null | awk '{print $1}'), wrk $(dpkg-query -W -f='${Version}' wrk 2>/dev/null),"
versions+=" h2load $(h2load --version 2>/dev/null | awk 'NR == 1 {print $2}'), $(swift --version 2>&1 | head -1 | sed 's/ (.*//'),"
versions+=" zlib $(dpkg-query -W -f='${Version}' zlib1g 2>/dev/null), openssl $(openssl version | awk '{print $2}')"
"$PY" - "$RUN_DIR" <<PY
import glob, json, os, re, statistics, sys
run = sys.argv[1]
# Only what this run measured: files an earlier run left in RUN_DIR are not read.
only = set("$ONLY".split())

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"

def num(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"

def kv(path):
    try:
        return dict(x.split("=", 1) for x in open(path).read().split() if "=" in x)
    except OSError:
        return {}

def wrk_requests(path):
    m = re.search(r"(\d+) requests in", open(path).read()) if os.path.exists(path) else None
    return int(m.group(1)) if m else None

def wrk_rps(path):
    m = re.search(r"Requests/sec:\s+([\d.]+)", open(path).read()) if os.path.exists(path) else None
    return float(m.group(1)) if m else None

rows = []   # (measurement, ours, reference, ours value, reference value, rps ratio, cpu ratio[, HAProxy, Caddy])

# run.sh: hello-server vs nginx (server CPU from the .cpu sidecars), ClientBench vs wrk, memory
tp = f"{run}/moya/results/moya/tp"
def server_stats(target):
    rps, cpu = [], []
    for f in sorted(glob.glob(f"{tp}/wrk_{target}_r*.txt")):
        r, n, c = wrk_rps(f), wrk_requests(f), kv(f[:-4] + ".cpu")
        rps.append(r)
        if n and "server_ticks" in c:
            cpu.append(int(c["server_ticks"]) / float(c.get("clk_tck", 100)) * 1e6 / n)
    return med(rps), med(cpu)
if "run" in only and glob.glob(f"{tp}/wrk_*"):
    (hr, hc), (nr, nc) = server_stats("hello-server"), server_stats("nginx")
    rows.append(("HTTP/1.1 server, wrk -c50, 13-byte body", "hello-server", "nginx return 200",
                 f"{num(hr)} req/s, {num(hc, 1)} µs", f"{num(nr)} req/s, {num(nc, 1)} µs", ratio(hr, nr), ratio(hc, nc)))
    cb = [json.load(open(f)) for f in sorted(glob.glob(f"{tp}/cb_nginx_r*.json"))]
    wrk_cpu = []
    for f in sorted(glob.glob(f"{tp}/wrk_nginx_r*.rusage")):
        n = wrk_requests(f[:-7] + ".txt")
        if n:
            wrk_cpu.append(int(kv(f)["child_cpu_us"]) / n)
    cr, cc = med([c.get("rps") for c in cb]), med([c.get("cpu_us_per_req") for c in cb])
    rows.append(("HTTP/1.1 client, 50 connections, vs nginx", "ClientBench", "wrk",
                 f"{num(cr)} req/s, {num(cc, 1)} µs", f"{num(nr)} req/s, {num(med(wrk_cpu), 1)} µs",
                 ratio(cr, nr), ratio(cc, med(wrk_cpu))))
    summary = open(f"{run}/logs/run.out").read() if os.path.exists(f"{run}/logs/run.out") else ""
    m = re.search(r"hello_idle_rss=(\S+) hello_per_conn=(\S+)", summary)
    if m:
        rows.append(("memory: idle RSS / per idle keep-alive connection", "hello-server", "nginx",
                     f"{m.group(1)} / {m.group(2)}", "see run.sh table", "-", "-"))

def peer(p, ours):   # a peer's cell: its req/s and CPU per request, and ours as a multiple of each
    if not p or not p[0]:
        return "-"
    return (f"{num(p[0])} req/s, {num(p[1], 1)} µs (ours {ratio(ours[0], p[0])}× req/s, "
            f"{ratio(ours[1], p[1])}× CPU)")

# gateway.sh (its summary.tsv): proxy vs nginx, HAProxy and Caddy; stub vs nginx return 200 (direct) and Caddy respond
tsv = f"{run}/proxy/results/throughput/summary.tsv"
if "gateway" in only and os.path.exists(tsv):
    lines = open(tsv).read().splitlines()
    head = lines[0].split("\t")
    t, reps = {}, {}
    for line in lines[1:]:
        r = dict(zip(head, line.split("\t")))
        f = lambda k: None if r.get(k) in (None, "None", "") else float(r[k])
        t[(r["mode"], r["conns"], r["target"])] = (f("rps_med"), f("proxy_cpu_us_per_req"), f("upstream_cpu_us_per_req"))
        reps[(r["mode"], r["conns"], r["target"])] = [float(x) for x in r.get("rps_all", "").split(",") if x]
    def paired(a, b, conns):
        """The median req/s ratio, then the range of the ratios repetition by repetition (each pair measured in the
        same repetition, minutes apart at most)."""
        xs, ys = reps.get(("pinned", conns, a), []), reps.get(("pinned", conns, b), [])
        each = [x / y for x, y in zip(xs, ys) if y]
        med_ratio = ratio(t[("pinned", conns, a)][0], t[("pinned", conns, b)][0])
        return f"{med_ratio} ({min(each):.2f}–{max(each):.2f})" if len(each) > 1 else med_ratio
    for conns in ("50", "1"):
        n, d, h, c, cr, tw = (t.get(("pinned", conns, x))
                              for x in ("nginx", "direct", "haproxy", "caddy", "caddy-respond", "nginx-twin"))
        if tw and n:
            rows.append((f"A/A: the same nginx proxy_pass twice, wrk -c{conns} (what the harness reads between equals)",
                         "nginx proxy_pass (twin)", "nginx proxy_pass",
                         f"{num(tw[0])} req/s, {num(tw[1], 1)} µs", f"{num(n[0])} req/s, {num(n[1], 1)} µs",
                         paired("nginx-twin", "nginx", conns), ratio(tw[1], n[1])))
        for suffix, uring in (("", ""), ("-epoll", ", io_uring: false")):
            g, s = t.get(("pinned", conns, "gw-proxy" + suffix)), t.get(("pinned", conns, "gw-stub" + suffix))
            if g and n:
                rows.append((f"proxy, wrk -c{conns}, 300-byte JSON upstream (CPU billed per process, upstream beside it)",
                             f"moya-gateway{uring}", "nginx proxy_pass",
                             f"{num(g[0])} req/s, {num(g[1], 1)} µs", f"{num(n[0])} req/s, {num(n[1], 1)} µs",
                             paired("gw-proxy" + suffix, "nginx", conns), ratio(g[1], n[1]), peer(h, g), peer(c, g)))
            if s and d:
                rows.append((f"answer without upstream, wrk -c{conns}", f"moya-gateway stub{uring}", "nginx return 200",
                             f"{num(s[0])} req/s, {num(s[1], 1)} µs", f"{num(d[0])} req/s, {num(d[2], 1)} µs",
                             paired("gw-stub" + suffix, "direct", conns), ratio(s[1], d[2]), "-", peer(cr, s)))
    for key in sorted(k for k in t if "coalesc" in k[2]):
        rows.append((f"coalescing ({key[2]}, -c{key[1]})", key[2], "-", f"{num(t[key][0])} req/s", "-", "-", "-"))

# layers.sh ALONE=1 (results.txt: target req/s user system busy): each proxy alone on CPU 1
layers = f"{run}/layers/results.txt"
if "layers" in only and os.path.exists(layers):
    by = {}
    for line in open(layers):
        target, *values = line.split()
        by.setdefault(target, []).append([float(v) for v in values])
    n = by.get("nginx")
    for target, ours in (("gateway", "moya-gateway"), ("gateway-epoll", "moya-gateway, io_uring: false")):
        g = by.get(target)
        if g and n:
            gr, nr = med([v[0] for v in g]), med([v[0] for v in n])
            gb, nb = med([v[3] for v in g]), med([v[3] for v in n])
            rows.append(("proxy, wrk -c50, each proxy alone on CPU 1 (CPU 1 busy time per request)", ours,
                         "nginx proxy_pass", f"{num(gr)} req/s, {num(gb, 1)} µs", f"{num(nr)} req/s, {num(nb, 1)} µs",
                         ratio(gr, nr), ratio(gb, nb)))

# h2.sh and gzip.sh: their RATIO lines and tables
def ratio_lines(name):
    path = f"{run}/logs/{name}.out"
    out = {}
    if os.path.exists(path):
        for m in re.finditer(r"^RATIO (\S+) (.*)$", open(path).read(), re.M):
            out[m.group(1)] = dict(x.split("=") for x in m.group(2).split())
    return out
def pair(r, unit="µs"):
    ours = f"{r['ours_rps']} req/s, {r['ours_cpu']} {unit}" if "ours_rps" in r else f"{r.get('ours_cpu', '-')} {unit}"
    ref = f"{r['ref_rps']} req/s, {r['ref_cpu']} {unit}" if "ref_rps" in r else f"{r.get('ref_cpu', '-')} {unit}"
    return ours, ref

def two(x):
    return "-" if x in (None, "-") else f"{float(x):.2f}"

for key, r in (ratio_lines("h2") if "h2" in only else {}).items():
    _, case, ka = key.split(".")
    ours = "moya-gateway, io_uring: false" if case.endswith("-epoll") else "moya-gateway"
    case = case.removesuffix("-epoll")
    rows.append((f"TLS {case.replace('-', ' ')}, proxied (h2load)", ours, f"nginx keepalive {ka[2:]}",
                 *pair(r), two(r.get("rps")), two(r.get("cpu"))))
g = ratio_lines("gzip") if "gzip" in only else {}
if "gzip.cost_per_kib" in g:
    rows.append(("gzip level 1: CPU per KiB of body (gzip − identity)", "moya-gateway", "nginx gzip",
                 *pair(g["gzip.cost_per_kib"], "µs/KiB"), "-", two(g["gzip.cost_per_kib"].get("cpu"))))
if "gzip.total" in g:
    rows.append(("gzip level 1: whole request, same body", "moya-gateway stub", "nginx static + gzip",
                 *pair(g["gzip.total"]), two(g["gzip.total"].get("rps")), two(g["gzip.total"].get("cpu"))))

# coalesce.sh: its markdown table (direct / varnish / coalesce / plain rows)
path = f"{run}/logs/coalesce.out"
if "coalesce" in only and os.path.exists(path):
    table = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] in ("direct", "varnish", "coalesce", "plain"):
            table[cells[0]] = cells
    def burst(cells, unit):
        return f"{cells[3]} {unit}, {cells[4].split()[0]} ms ({cells[5]} the delay)"
    if "coalesce" in table:
        c = table["coalesce"]
        for name, label, unit in (("varnish", "Varnish (built-in VCL, coalesces)", "hit(s)"),
                                  ("direct", "the upstream directly", "hits")):
            if name in table:
                rows.append(("100 concurrent identical GETs, 100 ms upstream: hits, wall", "moya-gateway coalesce: true",
                             label, burst(c, "hit(s)"), burst(table[name], unit), "-", "-"))

print("| measurement | ours | reference | ours (req/s, CPU/req) | reference | req/s ratio | CPU µs/req ratio "
      "| HAProxy | Caddy |")
print("|---|---|---|---|---|---:|---:|---|---|")
for r in rows:
    print("| " + " | ".join(tuple(r) + ("-", "-")[len(r) - 7:]) + " |")
print()
print("Ratios are ours/reference: req/s above 1 and CPU below 1 are better for us. HAProxy (one thread, http-reuse "
      "always) and Caddy (reverse_proxy, or respond beside the stub; GOMAXPROCS=1) run in the same gateway.sh run, "
      "pinned like the others, without access logs. A gateway.sh req/s ratio is the ratio of the medians, then in "
      "brackets the lowest and highest ratio of one repetition's pair; the A/A rows (the same nginx measured twice "
      "in each repetition) show how far apart the harness reads two equal proxies.")
print()
print("Conditions: $start, CPU $cpu_model x $(nproc), load average $load_start at start and $load_end at the end;"
      " $versions; servers pinned to CPU 1, load generators to CPU 0; DURATION=${DURATION}s per wrk/ClientBench run,"
      " NREQ=$NREQ h2load requests per run, REPS=$REPS, medians. Per-measurement tables: $RUN_DIR/logs/*.out.")
PY
