# shellcheck shell=bash disable=SC2034
# The benchmarks' own harness, sourced by every Benchmarks/*.sh after it has set RUN_DIR and any knob below. It needs
# nothing beside the repository: the peers (nginx, HAProxy, Varnish, Caddy) and the load tools (wrk, h2load) come from
# Debian's apt (`need` installs what is missing when run as root), their configurations are in Benchmarks/conf/ and
# the helper programs in Benchmarks/tools/ (Python standard library only).
#
# Rules every script follows through these functions:
#   - everything listens on 127.0.0.1 only, on the ports below, and a script refuses to start when one of its ports is
#     taken by a process it did not start (require_free_ports);
#   - every server is started by `spawn`, which records its PID; `cleanup` (on EXIT, via install_traps) stops exactly
#     those PIDs and their descendants, by PID, never by name; `kill_stale` stops what an interrupted earlier run of
#     the same RUN_DIR left behind, and only if the PID still runs one of our commands;
#   - servers are pinned to SERVER_CPU and load generators to CLIENT_CPU (PIN=1), and every load run is bounded by
#     its own count or duration and by `timeout -k 5 $CLIENT_TIMEOUT`;
#   - the machine may be shared: `guard_begin`/`guard_end` wait for a quiet machine and measure how much CPU other
#     processes took during a run, so that a disturbed run can be repeated and its other load reported.
#
# Defined here:
#   ROOT (the repository), HERE (Benchmarks/), CONF (Benchmarks/conf), TOOLS (Benchmarks/tools), PY
#   ports: UP_PORT SLOW_PORT NGX_PORT HAP_PORT VAR_PORT VARC_PORT CADDY_PORT CADDY_RESPOND_PORT TLS_H2_PORT TLS_H1_PORT
#   log die need spawn pid_of stop_one stop_all client client_bg install_traps kill_stale require_free_ports wait_http
#   render start_nginx start_upstream start_nginx_proxy start_haproxy start_varnish start_varnish_pass start_caddy
#   cpu_ticks percpu_snap percpu_busy guard_begin guard_end versions record_env build_gateway build_conditions
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
HERE="$ROOT/Benchmarks"
BENCH_DIR="$HERE"
CONF="$HERE/conf"
TOOLS="$HERE/tools"
RUN_DIR="${RUN_DIR:-/tmp/moyabench}"             # rendered configs, server prefixes, logs, pid files
RESULTS_DIR="${RESULTS_DIR:-$RUN_DIR/results}"   # raw tool output and summaries
PIN="${PIN:-1}"                                  # 1: servers on SERVER_CPU, load generators on CLIENT_CPU
SERVER_CPU="${SERVER_CPU:-1}"
CLIENT_CPU="${CLIENT_CPU:-0}"
CLIENT_TIMEOUT="${CLIENT_TIMEOUT:-120}"          # hard cap (s) on one load run
QUIET_PCT="${QUIET_PCT:-5}"                      # % of one CPU other processes may use during a timed run
QUIET_MAX_WAIT="${QUIET_MAX_WAIT:-30}"           # s to wait for a quiet machine before a timed run
GUARD_RETRIES="${GUARD_RETRIES:-1}"              # repetitions of a run that other load disturbed
export PYTHONDONTWRITEBYTECODE=1                  # the tools leave no __pycache__ in the repository
if [[ -z "${PY:-}" ]]; then
    if [[ -x /usr/bin/python3 ]]; then PY=/usr/bin/python3; else PY=python3; fi
fi

HOST=127.0.0.1
UP_PORT=18080            # the upstream: nginx `return 200` with a 300-byte JSON body on /json (conf/nginx-upstream.conf)
SLOW_PORT=18081          # tools/slow_upstream.py: /slow after a delay, counting hits (behind the upstream's /slow)
NGX_PORT=18090           # nginx proxy_pass (conf/nginx-proxy.conf)
HAP_PORT=18091           # HAProxy (conf/haproxy.cfg)
VAR_PORT=18092           # Varnish, pass-through (conf/varnish-pass.vcl)
VARC_PORT=18094          # Varnish, built-in VCL: caches and coalesces (conf/varnish-default.vcl)
CADDY_PORT=18096         # Caddy reverse_proxy (conf/caddy-proxy.Caddyfile)
CADDY_RESPOND_PORT=18097 # Caddy `respond` with the upstream's body (conf/caddy-respond.Caddyfile)
NGX_TWIN_PORT=18098     # a second nginx proxy_pass, the same configuration (the harness's A/A pair with NGX_PORT)
TLS_H2_PORT=18443        # nginx TLS + http2 (conf/nginx-tls.conf)
TLS_H1_PORT=18444        # nginx TLS, HTTP/1.1 only

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- tools from apt
# need CMD... : every command must exist; missing ones are installed from Debian when we are root.
declare -A _PACKAGE_OF=([nginx]=nginx-light [haproxy]=haproxy [varnishd]=varnish [caddy]=caddy [wrk]=wrk
    [h2load]=nghttp2-client [nghttp]=nghttp2-client [curl]=curl [openssl]=openssl [taskset]=util-linux
    [ss]=iproute2 [perf]=linux-perf [strace]=strace [valgrind]=valgrind)
need() {
    local c missing=() packages=()
    for c in "$@"; do
        command -v "$c" >/dev/null && continue
        missing+=("$c")
        [[ -n "${_PACKAGE_OF[$c]:-}" ]] && packages+=("${_PACKAGE_OF[$c]}")
    done
    ((${#missing[@]})) || return 0
    if ((${#packages[@]})) && [[ $(id -u) == 0 && "${NO_INSTALL:-0}" != 1 ]]; then
        log "installing from apt: ${packages[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >&2 ||
            { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >&2; }
        for c in "${missing[@]}"; do command -v "$c" >/dev/null || die "still missing $c after apt-get install"; done
    else
        die "missing ${missing[*]}: apt-get install ${packages[*]:-...} (Benchmarks/install.sh does it for every peer)"
    fi
}

# ---------------------------------------------------------------- pinning and load runs
SRV=()
CLI=()
set_pinning() {
    if [[ "$PIN" == 1 ]]; then SRV=(taskset -c "$SERVER_CPU"); CLI=(taskset -c "$CLIENT_CPU"); else SRV=(); CLI=(); fi
}
set_pinning

_CLIENT_PIDS=()
client_bg() {   # client_bg CMD... : a load run in the background, pinned and bounded; sets CLIENT_PID
    "${CLI[@]}" timeout -k 5 "$CLIENT_TIMEOUT" "$@" &
    CLIENT_PID=$!
    _CLIENT_PIDS+=("$CLIENT_PID:$(_starttime "$CLIENT_PID")")
}
client() { client_bg "$@"; wait "$CLIENT_PID"; }   # waited for, so that INT/TERM reach the traps at once

# ---------------------------------------------------------------- processes, by PID
_stat() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null; }   # /proc/PID/stat after "pid (comm) ": $1 state, $20 start
_starttime() { _stat "$1" | awk '{print $20}'; }
_alive() {
    local state
    state=$(_stat "$1" | awk '{print $1}')
    [[ -n "$state" && "$state" != Z && "$state" != X ]]
}
_descendants() {   # "pid:starttime" of every descendant of $1
    local p
    for p in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        echo "$p:$(_starttime "$p")"
        _descendants "$p"
    done
}
_kill_tree() {   # TERM, KILL after 5 s, then any descendant left that is still the same process (pid + start time)
    local pid=$1 descendants d i
    descendants=$(_descendants "$pid")
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do _alive "$pid" || break; sleep 0.1; done
    if _alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
    for d in $descendants; do
        if _alive "${d%%:*}" && [[ "$(_starttime "${d%%:*}")" == "${d#*:}" ]]; then kill -KILL "${d%%:*}" 2>/dev/null || true; fi
    done
}

_PIDS=()
_NAMES=()
LAST_PID=""
# The malloc tunable a spawned moya-gateway gets (the shipped image's, unit's and scripts/run.sh's); GW_GLIBC_TUNABLES
# replaces it, empty: glibc's defaults.
GW_TUNABLES="${GW_GLIBC_TUNABLES-glibc.malloc.tcache_count=64}"
# spawn NAME CMD... : start a server, its output in $RUN_DIR/logs/NAME.log; sets LAST_PID. A moya-gateway runs with
# GW_TUNABLES, and only it: the peers keep their own environment.
spawn() {
    local name=$1; shift
    local prefix=() arg
    for arg in "$@"; do
        if [[ "${arg##*/}" == moya-gateway ]]; then
            prefix=(env "GLIBC_TUNABLES=$GW_TUNABLES")
            break
        fi
    done
    mkdir -p "$RUN_DIR/pids" "$RUN_DIR/logs"
    "${prefix[@]}" "$@" >"$RUN_DIR/logs/$name.log" 2>&1 &
    LAST_PID=$!
    echo "$LAST_PID" >"$RUN_DIR/pids/$name.pid"
    _PIDS+=("$LAST_PID")
    _NAMES+=("$name")
}
pid_of() {   # pid_of NAME : the PID of a server this script spawned
    local i
    for i in "${!_NAMES[@]}"; do [[ "${_NAMES[$i]}" == "$1" ]] && { echo "${_PIDS[$i]}"; return 0; }; done
    return 1
}
stop_one() {   # stop_one NAME
    local i
    for i in "${!_NAMES[@]}"; do
        if [[ "${_NAMES[$i]}" == "$1" ]]; then
            _kill_tree "${_PIDS[$i]}"
            rm -f "$RUN_DIR/pids/$1.pid"
            unset '_PIDS[i]' '_NAMES[i]'
            _PIDS=("${_PIDS[@]}"); _NAMES=("${_NAMES[@]}")
            return 0
        fi
    done
    return 1
}
stop_all() {   # every server, last started first
    local i
    for ((i = ${#_PIDS[@]} - 1; i >= 0; i--)); do
        _kill_tree "${_PIDS[$i]}"
        rm -f "$RUN_DIR/pids/${_NAMES[$i]}.pid"
    done
    _PIDS=(); _NAMES=()
}
cleanup() {
    local c p
    for c in "${_CLIENT_PIDS[@]}"; do
        p=${c%%:*}
        if _alive "$p" && [[ "$(_starttime "$p")" == "${c#*:}" ]]; then _kill_tree "$p"; fi
    done
    _CLIENT_PIDS=()
    stop_all
}
install_traps() { trap cleanup EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; }
kill_stale() {   # servers an interrupted run of this RUN_DIR left: stopped only while they still run our commands
    local f pid cmd
    for f in "$RUN_DIR"/pids/*.pid; do
        [[ -e "$f" ]] || continue
        pid=$(<"$f"); cmd=""
        [[ "$pid" =~ ^[0-9]+$ ]] && cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
        if [[ -n "$cmd" && ( "$cmd" == *"$RUN_DIR"* || "$cmd" == *"$HERE"* ) ]] && _alive "$pid"; then
            log "stopping $(basename "$f" .pid) (pid $pid), left by an earlier run"
            _kill_tree "$pid"
        fi
        rm -f "$f"
    done
}
require_free_ports() {
    local p
    for p in "$@"; do
        if ss -Hltn "sport = :$p" | grep -q .; then die "port $p is in use by a process this script did not start"; fi
    done
}
wait_http() {   # wait_http URL [TIMEOUT_S] [PID] : until URL answers 2xx/3xx; fails when PID exits first
    local url=$1 t=${2:-15} pid=${3:-$LAST_PID} end=$((SECONDS + ${2:-15}))
    until curl -ksf -o /dev/null --max-time 1 "$url"; do
        if [[ -n "$pid" ]] && ! _alive "$pid"; then
            tail -n 20 "$RUN_DIR"/logs/*.log >&2 || true
            die "process $pid exited while waiting for $url"
        fi
        ((SECONDS < end)) || die "timed out after ${t}s waiting for $url"
        sleep 0.1
    done
}

# ---------------------------------------------------------------- the peers
render() {   # render SRC DST : @RUN@ (the run directory), @BENCH@ (Benchmarks/), @UPSTREAM_KEEPALIVE@ (default 64),
             # @PROXY_PORT@ (default NGX_PORT)
    sed -e "s#@RUN@#$RUN_DIR#g" -e "s#@BENCH@#$HERE#g" -e "s#@UPSTREAM_KEEPALIVE@#${UPSTREAM_KEEPALIVE:-64}#g" \
        -e "s#@PROXY_PORT@#${PROXY_PORT:-$NGX_PORT}#g" "$1" >"$2"
}
start_nginx() {   # start_nginx NAME CONF_FILE URL_TO_WAIT_FOR : its own prefix under $RUN_DIR/NAME; never the system nginx
    local name=$1 file=$2 url=$3 d="$RUN_DIR/$1"
    need nginx
    rm -rf "$d"; mkdir -p "$d/tmp"
    render "$CONF/$file" "$d/nginx.conf"
    chown -R nobody "$d/tmp" 2>/dev/null || true
    nginx -t -q -p "$d/" -c "$d/nginx.conf" -e "$d/error.log" || die "nginx config $file is invalid"
    spawn "$name" "${SRV[@]}" nginx -p "$d/" -c "$d/nginx.conf" -e "$d/error.log" -g 'daemon off;'
    wait_http "$url"
}
start_upstream() {   # the slow upstream, then the nginx upstream in front of it (every benchmark's upstream)
    spawn slowpy "${SRV[@]}" "$PY" "$TOOLS/slow_upstream.py" --port "$SLOW_PORT" --delay "${SLOW_DELAY:-0.1}"
    wait_http "http://$HOST:$SLOW_PORT/hits"
    start_nginx upstream nginx-upstream.conf "http://$HOST:$UP_PORT/json"
}
start_nginx_proxy() { start_nginx nginx nginx-proxy.conf "http://$HOST:$NGX_PORT/json"; }
start_nginx_twin() {   # the same nginx proxy_pass again, on NGX_TWIN_PORT: what the harness reads between equals
    PROXY_PORT=$NGX_TWIN_PORT start_nginx nginx-twin nginx-proxy.conf "http://$HOST:$NGX_TWIN_PORT/json"
}
start_haproxy() {
    local d="$RUN_DIR/haproxy"
    need haproxy
    rm -rf "$d"; mkdir -p "$d"
    render "$CONF/haproxy.cfg" "$d/haproxy.cfg"
    haproxy -c -q -f "$d/haproxy.cfg" || die "haproxy config is invalid"
    spawn haproxy "${SRV[@]}" haproxy -db -f "$d/haproxy.cfg"
    wait_http "http://$HOST:$HAP_PORT/json"
}
start_varnish() {   # start_varnish NAME PORT VCL_FILE
    local name=$1 port=$2 vcl=$3 d="$RUN_DIR/$1"
    need varnishd
    rm -rf "$d"; mkdir -p "$d"
    render "$CONF/$vcl" "$d/$vcl"
    # -j none: no privilege separation (a throwaway directory); timeout_idle=120 keeps idle keep-alive connections
    spawn "$name" "${SRV[@]}" varnishd -F -j none -n "$d" -a "$HOST:$port" -f "$d/$vcl" -s malloc,64m -T none \
        -p timeout_idle=120
    wait_http "http://$HOST:$port/json" 30
}
start_varnish_pass() { start_varnish varnish "$VAR_PORT" varnish-pass.vcl; }
start_caddy() {   # start_caddy NAME CADDYFILE URL_TO_WAIT_FOR : one Go thread of work (GOMAXPROCS=1), no admin API
    local name=$1 file=$2 url=$3 d="$RUN_DIR/$1"
    need caddy
    rm -rf "$d"; mkdir -p "$d/data" "$d/config"
    render "$CONF/$file" "$d/Caddyfile"
    XDG_DATA_HOME="$d/data" XDG_CONFIG_HOME="$d/config" caddy validate --adapter caddyfile --config "$d/Caddyfile" \
        >"$d/validate.log" 2>&1 || { cat "$d/validate.log" >&2; die "caddy config $file is invalid"; }
    spawn "$name" env GOMAXPROCS=1 XDG_DATA_HOME="$d/data" XDG_CONFIG_HOME="$d/config" "${SRV[@]}" \
        caddy run --adapter caddyfile --config "$d/Caddyfile"
    wait_http "$url"
}

# ---------------------------------------------------------------- CPU accounting
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() {   # cpu_ticks PID : user + system clock ticks of PID and its descendants, every thread
    local p t=0 v
    for p in "$1" $(_descendants "$1" | cut -d: -f1); do
        v=$(_stat "$p" | awk '{print $12 + $13}') || v=0
        t=$((t + ${v:-0}))
    done
    echo "$t"
}
percpu_snap() {   # "cpu0:total:idle cpu1:total:idle ..." (idle includes iowait)
    awk '/^cpu[0-9]/ {t = 0; for (i = 2; i <= NF; i++) t += $i; printf "%s:%d:%d ", $1, t, $5 + $6}' /proc/stat
}
percpu_busy() {   # percpu_busy "SNAP_BEFORE" "SNAP_AFTER" -> "cpu0_busy_pct=N cpu1_busy_pct=N ..."
    local a b out=""
    for a in $1; do
        for b in $2; do
            [[ ${b%%:*} == "${a%%:*}" ]] || continue
            out+=$(awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, ":"); split(b, y, ":"); dt = y[2] - x[2]; di = y[3] - x[3];
                printf "%s_busy_pct=%.0f ", x[1], (dt > 0 ? 100 * (dt - di) / dt : 0) }')
        done
    done
    echo "$out"
}
foreign_ticks() { "$PY" "$TOOLS/benchlib.py" foreign "$$"; }   # CPU ticks of every process outside this script's tree
wait_quiet() {
    local end=$((SECONDS + QUIET_MAX_WAIT)) a b pct warned=0
    while :; do
        a=$(foreign_ticks); sleep 1; b=$(foreign_ticks)
        pct=$(((b - a) * 100 / CLK_TCK))
        ((pct <= QUIET_PCT)) && return 0
        if ((SECONDS >= end)); then
            log "other processes still use ${pct}% of a CPU after ${QUIET_MAX_WAIT}s; measuring anyway"
            return 0
        fi
        ((warned)) || log "other processes use ${pct}% of a CPU; waiting up to ${QUIET_MAX_WAIT}s for a quiet machine"
        warned=1
    done
}
guard_begin() { wait_quiet; _G_F0=$(foreign_ticks); _G_T0=$(date +%s%N); }
guard_end() {   # sets FOREIGN_PCT (% of one CPU other processes used during the run); fails above QUIET_PCT
    local f1 t1
    f1=$(foreign_ticks); t1=$(date +%s%N)
    FOREIGN_PCT=$(((f1 - _G_F0) * 100 * 1000000000 / (CLK_TCK * (t1 - _G_T0 + 1))))
    ((FOREIGN_PCT <= QUIET_PCT))
}

# ---------------------------------------------------------------- conditions
versions() {
    echo "nginx: $(nginx -v 2>&1 | sed 's/.*nginx\///')"
    echo "haproxy: $(haproxy -v 2>/dev/null | head -1 | awk '{print $3}')"
    echo "varnish: $(varnishd -V 2>&1 | head -1 | sed -E 's/.*\((varnish-[^ ]+).*/\1/')"
    echo "caddy: $(caddy version 2>/dev/null | awk '{print $1}')"
    echo "wrk: $(dpkg-query -W -f='${Version}' wrk 2>/dev/null)"
    echo "h2load: $(h2load --version 2>/dev/null | head -1 | awk '{print $2}')"
    echo "openssl: $(openssl version | awk '{print $2}')"
    echo "python: $("$PY" --version 2>&1 | awk '{print $2}')"
}
record_env() {   # record_env DIR : DIR/conditions.txt
    {
        echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "host: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
        echo "cpu: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo) x $(nproc)"
        echo "mem: $(free -m | awk '/Mem:/{print $2" MiB"}')"
        echo "pinning: PIN=$PIN server_cpu=$SERVER_CPU client_cpu=$CLIENT_CPU"
        echo "loadavg_at_start: $(cut -d' ' -f1-3 /proc/loadavg)"
        versions
    } >"$1/conditions.txt"
}
# The moya-gateway that deploy/ ships, as scripts/build-release.sh --static-swift-stdlib builds it (profile-guided, the
# Swift runtime linked statically): what users run, so what the benchmarks measure.
build_gateway() {   # sets GW_BIN: as given, else the shipped build (built unless SKIP_BUILD=1)
    if [[ -z "${GW_BIN:-}" ]]; then
        if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
            log "building the shipped moya-gateway (scripts/build-release.sh --static-swift-stdlib: minutes)"
            GW_BIN=$("$ROOT/scripts/build-release.sh" --static-swift-stdlib | tail -n 1)
        else
            GW_BIN=$("$ROOT/scripts/build-release.sh" --static-swift-stdlib --show-bin-path)
        fi
    fi
    [[ -x "$GW_BIN" ]] || die "missing $GW_BIN (build it with scripts/build-release.sh --static-swift-stdlib)"
}
build_conditions() {   # the swift, commit and CPU lines of a conditions.txt
    echo "swift: $(swift --version 2>&1 | head -1)"
    echo "commit: $(git -C "$ROOT" rev-parse --short HEAD) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD))"
    echo "cpu_model: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
    echo "gateway GLIBC_TUNABLES: $GW_TUNABLES"
}
