#!/usr/bin/env bash
# Coalescing wall time: N (=100) concurrent identical GETs, fired at once over pre-opened connections by
# tools/burst.py: the slow upstream (tools/slow_upstream.py, DELAY s per request, counts hits) behind the nginx
# upstream on :18080 (conf/nginx-upstream.conf), every server on SERVER_CPU (1), burst.py on CLIENT_CPU (0). Targets, each with a fresh `?k=` key per burst:
#   direct      the stub upstream itself (the floor: N hits, wall ≈ DELAY)
#   varnish     Varnish with its built-in VCL (conf/varnish-default.vcl), a coalescing cache (waiting list), same run
#   coalesce    a moya-gateway route with `coalesce: true` (goal: 1 hit, wall ≤ 1.15 × DELAY)
#   plain       the same upstream through moya-gateway without coalescing (control: N hits)
# Medians of REPS bursts.
# Env: N=100 REPS=5 DELAY=0.1 PORT_BASE=18280 SKIP_BUILD=0
# Output: a markdown table on stdout; raw JSON lines under $RUN_DIR/results/coalesce-gw/.
set -euo pipefail
export RUN_DIR="${RUN_DIR:-/tmp/moyabench-coalesce}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

N="${N:-100}"
REPS="${REPS:-5}"
export SLOW_DELAY="${DELAY:-0.1}"
PORT_BASE="${PORT_BASE:-18280}"
GATEWAY_PORT=$PORT_BASE ADMIN_PORT=$((PORT_BASE + 1))
OUT="$RESULTS_DIR/coalesce-gw"
need curl taskset nginx varnishd "$PY"

install_traps
kill_stale
rm -rf "$OUT"; mkdir -p "$OUT"
require_free_ports "$SLOW_PORT" "$UP_PORT" "$VARC_PORT" "$GATEWAY_PORT" "$ADMIN_PORT"
build_gateway
cat >"$OUT/gateway.yaml" <<YAML
server: { listen: ["127.0.0.1:$GATEWAY_PORT"], threads: 1 }
admin: { listen: "127.0.0.1:$ADMIN_PORT" }
logging: { access_log: false }
upstreams:
  slow: { base_url: "http://127.0.0.1:$UP_PORT", timeout: { response: 20s }, pool: { max_connections: 256 } }
routes:
  - { name: coalesce, match: { path_prefix: /coalesce }, upstream: slow, coalesce: true, rewrite: { strip_prefix: /coalesce } }
  - { name: plain, match: { path_prefix: /plain }, upstream: slow, rewrite: { strip_prefix: /plain } }
YAML
start_upstream
start_varnish varnish-default "$VARC_PORT" varnish-default.vcl
spawn gateway "${SRV[@]}" "$GW_BIN" serve --config "$OUT/gateway.yaml"
wait_http "http://$HOST:$ADMIN_PORT/readyz"

TARGETS=(direct varnish coalesce plain)
declare -A PREFIX=([direct]="" [varnish]="" [coalesce]="/coalesce" [plain]="/plain")
declare -A PORT=([direct]=$UP_PORT [varnish]=$VARC_PORT [coalesce]=$GATEWAY_PORT [plain]=$GATEWAY_PORT)
for rep in $(seq "$REPS"); do
    for target in "${TARGETS[@]}"; do
        key="$target-$rep-$(date +%s%N)"
        curl -sf -o /dev/null "http://$HOST:$SLOW_PORT/reset"
        client "$PY" "$TOOLS/burst.py" --port "${PORT[$target]}" --path "${PREFIX[$target]}/slow?k=$key" \
            -n "$N" --timeout 20 >"$OUT/burst.json"
        burst=$(cat "$OUT/burst.json")
        sleep 0.3   # let any straggler reach the upstream before counting
        hits=$(curl -sf "http://$HOST:$SLOW_PORT/hits")
        echo "{\"target\":\"$target\",\"rep\":$rep,\"burst\":$burst,\"upstream\":$hits}" >>"$OUT/bursts.jsonl"
        log "rep $rep $target: $burst hits=$hits"
    done
done
stop_all

"$PY" - "$OUT/bursts.jsonl" "$N" "$SLOW_DELAY" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
n, delay_ms = int(sys.argv[2]), float(sys.argv[3]) * 1000
print(f"| target | bursts | 200s / {n} | upstream hits (median) | wall ms (median, min–max) | wall / upstream delay |")
print("|---|---|---|---|---|---|")
for target in ["direct", "varnish", "coalesce", "plain"]:
    mine = [r for r in rows if r["target"] == target]
    walls = [r["burst"]["wall_ms"] for r in mine]
    oks = [r["burst"]["statuses"].get("200", 0) for r in mine]
    hits = [r["upstream"]["hits"] for r in mine]
    wall = statistics.median(walls)
    print(f"| {target} | {len(mine)} | {min(oks)}–{max(oks)} | {statistics.median(hits):g} | "
          f"{wall:.1f} ({min(walls):.1f}–{max(walls):.1f}) | {wall / delay_ms:.2f}× |")
PYEOF
