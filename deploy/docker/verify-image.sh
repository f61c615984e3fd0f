#!/usr/bin/env bash
# Builds the equivalent of deploy/docker/Dockerfile's image without a container engine, runs it, and proves it works.
#
#   deploy/docker/verify-image.sh          # as root; a few minutes warm, longer cold (see deploy/docker/README.md)
#
# 1. Build stage. This host stands in for the swift image (checked: same Debian release and Swift version as the
#    FROM tag). deploy/docker/dockerfile.py runs the stage's COPY and RUN instructions as written: COPY from the build
#    context with the Dockerfile's .dockerignore, RUN with `/bin/sh -c` and the stage's own paths (/src, /out) mapped
#    into .build-image/build-stage; the RUN --mount=type=cache target (/src/.build) persists there between runs.
# 2. Runtime stage. `debootstrap --variant=minbase` of the FROM tag's release, with debian:*-slim's dpkg/apt settings
#    (docs, man pages and locales excluded, apt caches cleaned), stands in for the slim base image. The stage's RUN
#    (package list, user and group) runs verbatim in a chroot. Both are cached under .build-image/ (the base by release
#    and mirror, renewed after VERIFY_IMAGE_MAX_AGE_DAYS; the RUN layer by the RUN's text). The COPY steps then fill a
#    fresh copy, .build-image/rootfs: that directory is the image.
# 3. Run. ENTRYPOINT+CMD with the image's ENV, USER and WORKDIR, as PID 1 of new mount/PID/UTS/IPC/network namespaces,
#    chrooted into the rootfs with /proc, a read-only /sys and a minimal /dev (as a container runtime sets up). Checks:
#    every shared library resolves inside the rootfs (ldd there) and belongs to one of its packages; `moya-gateway
#    check` of the baked configuration; the HEALTHCHECK command verbatim as the image user passes; every stubbed route
#    of the baked configuration answers with its configured status and body; uid/gid 10001, no capabilities, the
#    configuration not writable; an in-flight request completes after STOPSIGNAL and the process exits 0 within
#    drain_timeout. Then once more as deploy/docker/compose.yaml's service runs it: read-only root, cap_drop ALL,
#    no-new-privileges, its bind mounts, environment, command and nofile limit.
# 4. Prints sizes (binary, /out, base, image), time to healthy and idle RSS, and writes them to .build-image/last-run.txt.
#
# Needs root (debootstrap, chroot, unshare, mount) and, unless the rootfs is cached, the Debian mirror: when the mirror
# cannot be reached it prints "verify-image: skipped: ..." and exits 0. Every wait has a timeout; every process started
# here is killed by PID on exit; all mounts are made inside private mount namespaces and vanish with them. The network
# namespace is the container's own: the baked ports 8080/9090 are used as they are, and traffic stays on its loopback.
#
# Environment: VERIFY_IMAGE_DIR (work directory, default .build-image), VERIFY_IMAGE_MIRROR (default: this machine's
# apt mirror), VERIFY_IMAGE_FRESH=1 (rebuild the cached rootfs), VERIFY_IMAGE_MAX_AGE_DAYS (default 7).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

DOCKERFILE=deploy/docker/Dockerfile
HELPER=deploy/docker/dockerfile.py
COMPOSE=deploy/docker/compose.yaml
PY=/usr/bin/python3
WORK=$(realpath -m "${VERIFY_IMAGE_DIR:-.build-image}")
case $WORK in /|/bin|/etc|/usr|/var|/root|/home|/tmp) echo "verify-image: VERIFY_IMAGE_DIR=$WORK: use a directory of its own" >&2; exit 1 ;; esac
STAGE=$WORK/build-stage
ROOTFS=$WORK/rootfs
LOGS=$WORK/logs
MAX_AGE_DAYS=${VERIFY_IMAGE_MAX_AGE_DAYS:-7}
RECIPE=1                      # bump when the base rootfs recipe below changes (invalidates the cache)
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin   # debian images' ENV PATH
START=$(date +%s.%N)

say() { printf 'verify-image: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }
skip() { say "skipped: $*"; exit 0; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1000000 }'; }
size_of() { du -sbx "$1" | cut -f1; }
show_log() { { say "last lines of $1:"; tail -n "${2:-25}" "$1" | sed 's/^/    /'; } >&2; }

# Processes started here (background jobs and the namespaces' PID 1), killed on exit with everything they started.
# Mounts live in the private mount namespaces and vanish with their processes.
PIDS=()
tree_of() {   # tree_of PID...: those PIDs and all their descendants
    local queue=("$@") pid
    while [ "${#queue[@]}" -gt 0 ]; do
        pid=${queue[0]}; queue=("${queue[@]:1}")
        [ -d "/proc/$pid" ] || continue
        echo "$pid"
        queue+=($(cat /proc/"$pid"/task/*/children 2>/dev/null))
    done
}
cleanup() {
    local pid
    for pid in $(tree_of "${PIDS[@]}"); do
        kill -KILL "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if grep -q " ${WORK}/" /proc/self/mountinfo 2>/dev/null; then
        say "WARNING: mounts left under $WORK:"; grep " ${WORK}/" /proc/self/mountinfo | sed 's/^/    /'
    fi
}
forget_pid() {   # forget_pid PID: it was waited for; never signal that number again
    local kept=() pid
    for pid in "${PIDS[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    PIDS=("${kept[@]}")
}
# run_waiting LOG ARGV...: a long step as a background job (output to LOG) waited for, so that INT/TERM stop it at
# once (a foreground command would delay the trap until it ends).
run_waiting() {
    local log=$1; shift
    "$@" >"$log" 2>&1 &
    local pid=$! status=0
    PIDS+=("$pid")
    wait "$pid" || status=$?
    forget_pid "$pid"
    return "$status"
}
trap cleanup EXIT
trap 'say "interrupted: stopping what it started"; exit 130' INT TERM

# Removes a cached directory; refuses while anything is mounted under it.
remove_tree() {
    [ -e "$1" ] || return 0
    if grep -q " $1[/ ]" /proc/self/mountinfo; then fail "$1 has mounts under it; not removing"; fi
    rm -rf --one-file-system "$1"
}

# ---------------------------------------------------------------------------------------------------------------------
# 0. Preconditions.
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, unshare, mount); run it with sudo"
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v ip >/dev/null || missing+=(iproute2)
command -v curl >/dev/null || missing+=(curl)
"$PY" -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
        >/dev/null 2>&1 || skip "could not install ${missing[*]} with apt-get (no package mirror?)"
fi
unshare --net --mount --pid --fork --uts --ipc true 2>/dev/null \
    || fail "unshare cannot create network/mount/PID namespaces here (needed to run the image like a container)"
mkdir -p "$WORK" "$LOGS"

# ---------------------------------------------------------------------------------------------------------------------
# 1. What the Dockerfile says (parsed from the file itself, every run).
parsed=$("$PY" "$HELPER" parse "$DOCKERFILE") || fail "could not parse $DOCKERFILE"
eval "$parsed"
say "$DOCKERFILE: build FROM $DF_BUILD_BASE, runtime FROM $DF_RUNTIME_BASE"
say "  runtime packages: ${DF_RUNTIME_PACKAGES[*]}"
say "  ENV ${DF_ENV[*]}; USER $DF_USER; WORKDIR $DF_WORKDIR; EXPOSE ${DF_EXPOSE[*]}; STOPSIGNAL $DF_STOPSIGNAL"
say "  ENTRYPOINT ${DF_ENTRYPOINT[*]}; CMD ${DF_CMD[*]}"
say "  HEALTHCHECK interval ${DF_HC_INTERVAL}s timeout ${DF_HC_TIMEOUT}s start-period ${DF_HC_START_PERIOD}s retries $DF_HC_RETRIES"

# The stand-ins must match the FROM tags: swift:<version>-<release> and debian:<release>-slim.
[[ $DF_BUILD_BASE =~ ^swift:([0-9]+\.[0-9]+)-([a-z]+)$ ]] || fail "build base $DF_BUILD_BASE is not swift:<x.y>-<release>"
swift_version=${BASH_REMATCH[1]} build_release=${BASH_REMATCH[2]}
[[ $DF_RUNTIME_BASE =~ ^debian:([a-z]+)(-slim)?$ ]] || fail "runtime base $DF_RUNTIME_BASE is not debian:<release>[-slim]"
SUITE=${BASH_REMATCH[1]}
[ "$build_release" = "$SUITE" ] || fail "build stage ($build_release) and runtime stage ($SUITE) are different Debian releases: the binary's glibc would not match"
host_release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$host_release" = "$build_release" ] \
    || fail "this host is Debian '$host_release', the build stage is $DF_BUILD_BASE: the host cannot stand in for it"
swift --version 2>&1 | grep -q "Swift version ${swift_version}\(\.\| \)" \
    || fail "the build stage uses Swift $swift_version, this host has: $(swift --version 2>&1 | head -1)"
[[ $DF_USER =~ ^([0-9]+):([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" != 0 ] \
    || fail "USER '$DF_USER' is not a numeric non-root uid:gid (this script runs the image with exactly that)"
RUN_UID=${BASH_REMATCH[1]} RUN_GID=${BASH_REMATCH[2]}
kill -l "${DF_STOPSIGNAL#SIG}" >/dev/null 2>&1 || fail "STOPSIGNAL $DF_STOPSIGNAL is not a signal"
IMAGE_ARGV=("${DF_ENTRYPOINT[@]}" "${DF_CMD[@]}")
[ "${#IMAGE_ARGV[@]}" -gt 0 ] || fail "the Dockerfile has neither ENTRYPOINT nor CMD"

# The swift:<version>-bookworm image's own packages (its Dockerfile in the swift-docker repository, debian/12): the
# host stands in for that image only with them. They matter: FoundationNetworking's static archive links -lcurl, which
# resolves to libcurl4-openssl-dev's libcurl.so, so the binary then needs libcurl.so.4 at run time.
SWIFT_IMAGE_PACKAGES=(binutils gcc git libcurl4-openssl-dev libedit-dev libicu-dev libncurses-dev libpython3-dev
                      libsqlite3-dev libstdc++-12-dev libxml2-dev pkg-config tzdata uuid-dev)
missing=()
for p in "${SWIFT_IMAGE_PACKAGES[@]}" "${DF_BUILD_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing the build stage's packages (the $DF_BUILD_BASE image's and its RUN's) missing here: ${missing[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
        >/dev/null 2>&1 || skip "could not install ${missing[*]} with apt-get (no package mirror?)"
fi

# The mirror apt uses on this machine (deb822 or one-line sources), for the release and its security suite.
mirror_for() {   # mirror_for SUITE -> URI
    "$PY" - "$1" <<'PYTHON'
import glob, re, sys
suite = sys.argv[1]
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for block in open(path, encoding="utf-8").read().split("\n\n"):
        fields = dict((k.strip(), v.strip()) for k, _, v in (l.partition(":") for l in block.splitlines())
                      if not k.startswith("#") and v)
        if suite in fields.get("Suites", "").split() and "deb" in fields.get("Types", "").split():
            print(fields["URIs"].split()[0]); sys.exit()
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        continue
    for line in lines:
        m = re.match(r"\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
        if m and m.group(2) == suite:
            print(m.group(1)); sys.exit()
PYTHON
}
MIRROR=${VERIFY_IMAGE_MIRROR:-$(mirror_for "$SUITE")}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=$(mirror_for "$SUITE-security")
SECURITY_MIRROR=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
ARCH=$(dpkg --print-architecture)

mirror_reachable() {
    curl -fsS --max-time 15 -o /dev/null "$MIRROR/dists/$SUITE/InRelease" 2>"$LOGS/mirror-probe.log"
}

hash_of() { printf '%s\n' "$@" | sha256sum | cut -c1-12; }
BASE_KEY=$(hash_of "$SUITE" "$ARCH" "$MIRROR" "$SECURITY_MIRROR" minbase "recipe=$RECIPE")
BASE=$WORK/base-$SUITE-$BASE_KEY
# Runtime RUN steps before the first COPY form the cached layer (keyed on their text: packages, user, group).
LAYER_RUNS=()
for i in "${!DF_RUNTIME_STEP_KINDS[@]}"; do
    [ "${DF_RUNTIME_STEP_KINDS[$i]}" = RUN ] || break
    LAYER_RUNS+=("${DF_RUNTIME_STEP_TEXTS[$i]}")
done
LAYER_KEY=$(hash_of "$BASE_KEY" "${LAYER_RUNS[@]}")
LAYER=$WORK/layer-$LAYER_KEY

# Is the mirror needed (nothing cached, or the cache is stale)? Decided before the build so that a skip is quick.
stale=""
if [ -d "$BASE" ] && [ -n "$(find "$BASE" -maxdepth 0 -mtime +"$MAX_AGE_DAYS")" ]; then
    stale="older than $MAX_AGE_DAYS days"
fi
if [ "${VERIFY_IMAGE_FRESH:-0}" = 1 ]; then stale="VERIFY_IMAGE_FRESH=1"; fi
if [ ! -d "$BASE" ] || [ ! -d "$LAYER" ] || [ -n "$stale" ]; then
    if ! mirror_reachable; then
        if [ -d "$BASE" ] && [ -d "$LAYER" ]; then
            say "  NOTE: the mirror is unreachable; using the cached rootfs ($stale)"
            stale=""
        else
            skip "the Debian mirror $MIRROR is unreachable ($(head -c 200 "$LOGS/mirror-probe.log" | tr '\n' ' '))"
        fi
    fi
fi
# ---------------------------------------------------------------------------------------------------------------------
# 2. Build stage.
t=$(date +%s.%N)
say "build stage (host = $DF_BUILD_BASE): $STAGE; log: $LOGS/build-stage.log"
if ! run_waiting "$LOGS/build-stage.log" timeout 3600 nice -n 10 "$PY" "$HELPER" build-stage "$DOCKERFILE" . "$STAGE"; then
    show_log "$LOGS/build-stage.log" 40
    fail "the build stage failed"
fi
grep -E '^  (RUN|COPY|WORKDIR) ' "$LOGS/build-stage.log" | cut -c1-150 | sed 's/^/  /'
BINARY=$STAGE/out/usr/local/bin/moya-gateway
[ -x "$BINARY" ] || fail "the build stage did not produce /out/usr/local/bin/moya-gateway"
say "  --version in the build stage: $("$BINARY" --version 2>&1 | head -1)"
say "  check in the build stage: $(grep -E '^ok:' "$LOGS/build-stage.log" | tail -1)"
BUILD_SECONDS=$(since "$t")
say "  build stage done in ${BUILD_SECONDS}s"

# ---------------------------------------------------------------------------------------------------------------------
# 3. Runtime stage: base rootfs (cached), the RUN layer (cached), then the COPY steps into a fresh copy.

# INNER sets up a container's mounts inside fresh namespaces, then chroots. Parameters come from C_* variables:
#   C_ROOT rootfs; C_NET private (own network namespace, loopback up) or host; C_RO 1 = read-only root;
#   C_BINDS newline-separated host:container[:ro] bind mounts; C_RESOLV 1 = bind the host's resolv.conf (apt);
#   C_USERSPEC uid:gid for chroot (empty: root); C_NOFILE soft:hard nofile limit (empty: inherited);
#   C_TIMEOUT seconds after which the whole container is killed (empty: none).
INNER='set -eu
root=$C_ROOT
[ "$C_RO" = 1 ] && mount --bind "$root" "$root"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount -t tmpfs -o nosuid,mode=0755,size=65536k tmpfs "$root/dev"
for node in null zero full random urandom tty; do
    : > "$root/dev/$node"; mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/shm" "$root/dev/pts"
mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=65536k shm "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"; ln -s /proc/self/fd/1 "$root/dev/stdout"; ln -s /proc/self/fd/2 "$root/dev/stderr"
if [ "$C_RESOLV" = 1 ]; then
    [ -e "$root/etc/resolv.conf" ] || : > "$root/etc/resolv.conf"
    mount --bind /etc/resolv.conf "$root/etc/resolv.conf"
fi
printf "%s\n" "$C_BINDS" | while IFS=: read -r source target mode; do
    [ -n "$source" ] || continue
    mount --bind "$source" "$root$target"
    if [ "$mode" = ro ]; then mount -o remount,bind,ro "$root$target"; fi
done
[ "$C_RO" = 1 ] && mount -o remount,bind,ro "$root"
[ "$C_NET" = private ] && ip link set lo up
hostname moya-gateway
if [ -n "$C_NOFILE" ]; then ulimit -H -n "${C_NOFILE#*:}"; ulimit -S -n "${C_NOFILE%%:*}"; fi
if [ -n "$C_USERSPEC" ]; then exec chroot --userspec="$C_USERSPEC" "$root" "$@"; fi
exec chroot "$root" "$@"'

# container ROOTFS ARGV...: runs ARGV in a fresh container (foreground, output to stdout/stderr). C_* as above.
container() {
    local root=$1; shift
    local net=()
    local limit=()
    [ "${C_NET:-private}" = private ] && net=(--net)
    [ -n "${C_TIMEOUT:-}" ] && limit=(timeout --kill-after=5 "$C_TIMEOUT")
    C_ROOT=$root C_NET=${C_NET:-private} C_RO=${C_RO:-0} C_BINDS=${C_BINDS:-} C_RESOLV=${C_RESOLV:-0} \
        C_USERSPEC=${C_USERSPEC:-} C_NOFILE=${C_NOFILE:-} \
        "${limit[@]}" unshare --mount --propagation private --pid --fork --uts --ipc "${net[@]}" \
        /bin/bash -c "$INNER" inner "$@"
}

# The base: debootstrap minbase plus the slim variant's dpkg/apt settings.
build_base() {
    local tmp=$BASE.tmp
    remove_tree "$tmp"
    say "  debootstrap --variant=minbase $SUITE from $MIRROR (log: $LOGS/debootstrap.log)"
    # In its own mount namespace: the /proc and /sys debootstrap mounts in the target cannot outlive it.
    local try
    for try in 1 2; do     # a second try for a transient network error
        remove_tree "$tmp"
        run_waiting "$LOGS/debootstrap.log" timeout 1500 unshare --mount --propagation private \
            debootstrap --variant=minbase --arch="$ARCH" "$SUITE" "$tmp" "$MIRROR" && break
        mirror_reachable || skip "the Debian mirror $MIRROR stopped answering during debootstrap"
        [ "$try" = 1 ] && { say "  debootstrap failed; trying once more"; continue; }
        show_log "$LOGS/debootstrap.log"; fail "debootstrap failed"
    done
    # debian:*-slim (debuerreotype): no init scripts run by dpkg, no docs/man pages/locales, apt caches cleaned after
    # every install, no translations, compressed indexes. Written here in our own words, to the same effect.
    printf '#!/bin/sh\n# Started services make no sense in an image build.\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$tmp/usr/sbin/policy-rc.d"
    cat > "$tmp/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# Slim image: documentation, manuals and translations are not installed (copyright files are).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
EOF
    echo 'force-unsafe-io' > "$tmp/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
    cat > "$tmp/etc/apt/apt.conf.d/docker-clean" <<'EOF'
// Downloaded packages and apt's binary caches are removed after every install and update.
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' > "$tmp/etc/apt/apt.conf.d/docker-no-languages"
    echo 'Acquire::GzipIndexes "true";' > "$tmp/etc/apt/apt.conf.d/docker-gzip-indexes"
    echo 'Apt::AutoRemove::SuggestsImportant "false";' > "$tmp/etc/apt/apt.conf.d/docker-autoremove-suggests"
    local d
    for d in usr/share/doc usr/share/groff usr/share/info usr/share/linda usr/share/lintian/overrides usr/share/locale \
             usr/share/man; do
        [ -d "$tmp/$d" ] || continue
        find "$tmp/$d" -mindepth 1 ! -type d ! -path "$tmp/usr/share/doc/*/copyright" \
            ! -path "$tmp/usr/share/locale/locale.alias" -delete
        find "$tmp/$d" -mindepth 1 -type d -empty -delete
    done
    # The slim image's sources: the release, its updates and its security suite (deb822, like debian:bookworm-slim).
    rm -f "$tmp/etc/apt/sources.list"
    cat > "$tmp/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/*.bin "$tmp"/var/cache/apt/archives/*.deb \
        "$tmp"/var/log/bootstrap.log "$tmp"/var/log/dpkg.log "$tmp"/var/log/alternatives.log "$tmp"/var/log/apt/* \
        "$tmp"/var/cache/debconf/*-old "$tmp"/var/lib/dpkg/*-old "$tmp"/tmp/* 2>/dev/null || true
    mv "$tmp" "$BASE"
}

build_layer() {
    local tmp=$LAYER.tmp text try
    for try in 1 2; do     # a second try, from the base again, for a transient network error
        remove_tree "$tmp"
        cp -a --reflink=auto "$BASE" "$tmp"
        for text in "${LAYER_RUNS[@]}"; do
            say "  RUN (in the chroot, as root) ${text:0:110}..."
            # As docker build runs RUN: /bin/sh -c, the image's PATH, root, the host's network and resolv.conf.
            C_NET=host C_RESOLV=1 C_TIMEOUT=900 run_waiting "$LOGS/runtime-run.log" container "$tmp" \
                /usr/bin/env -i PATH="$IMAGE_PATH" HOME=/root /bin/sh -c "$text" || continue 2
        done
        mv "$tmp" "$LAYER"
        return 0
    done
    mirror_reachable || skip "the Debian mirror $MIRROR stopped answering during the runtime stage's RUN"
    show_log "$LOGS/runtime-run.log"; fail "the runtime stage's RUN failed (twice)"
}

t=$(date +%s.%N)
say "runtime stage ($DF_RUNTIME_BASE = debootstrap minbase $SUITE + slim settings; mirror $MIRROR)"
if [ -n "$stale" ]; then
    say "  cached base is stale ($stale): rebuilding"
    remove_tree "$LAYER"; remove_tree "$BASE"
fi
# Cached trees of other keys (an older package list, another mirror) are dropped.
for old in "$WORK"/base-* "$WORK"/layer-*; do
    [ -e "$old" ] && [ "$old" != "$BASE" ] && [ "$old" != "$LAYER" ] && remove_tree "$old"
done
if [ -d "$BASE" ]; then say "  base: cached ($(basename "$BASE"), $(date -r "$BASE" '+%F'))"; else build_base; fi
if [ -d "$LAYER" ]; then say "  RUN layer: cached ($(basename "$LAYER"))"; else build_layer; fi

remove_tree "$ROOTFS"
cp -a --reflink=auto "$LAYER" "$ROOTFS"
for i in "${!DF_RUNTIME_STEP_KINDS[@]}"; do
    [ "$i" -lt "${#LAYER_RUNS[@]}" ] && continue
    text=${DF_RUNTIME_STEP_TEXTS[$i]}
    case ${DF_RUNTIME_STEP_KINDS[$i]} in
        COPY)
            say "  COPY $text"
            "$PY" "$HELPER" copy "$DOCKERFILE" . "$STAGE" "$ROOTFS" "${DF_RUNTIME_STEP_WORKDIRS[$i]}" "$text" \
                || fail "COPY $text failed" ;;
        RUN)
            say "  RUN ${text:0:110}"
            C_NET=host C_RESOLV=1 C_TIMEOUT=900 run_waiting "$LOGS/runtime-run-$i.log" container "$ROOTFS" \
                /usr/bin/env -i PATH="$IMAGE_PATH" HOME=/root /bin/sh -c "cd ${DF_RUNTIME_STEP_WORKDIRS[$i]} && $text" \
                || { show_log "$LOGS/runtime-run-$i.log"; fail "RUN $text failed"; } ;;
    esac
done
RUNTIME_SECONDS=$(since "$t")
say "  runtime stage done in ${RUNTIME_SECONDS}s"

# Sizes: the image is the rootfs (du counts hard links once, apparent bytes as in a layer tarball).
SIZE_BINARY=$(stat -c %s "$BINARY")
SIZE_OUT=$(size_of "$STAGE/out")
SIZE_BASE=$(size_of "$BASE")
SIZE_LAYER=$(size_of "$LAYER")
SIZE_IMAGE=$(size_of "$ROOTFS")

# ---------------------------------------------------------------------------------------------------------------------
# 4. Static checks of the assembled image.
say "image checks"
CONFIG=""
for ((i = 0; i < ${#IMAGE_ARGV[@]}; i++)); do
    [ "${IMAGE_ARGV[$i]}" = --config ] && CONFIG=${IMAGE_ARGV[$((i + 1))]:-}
done
[ -n "$CONFIG" ] || fail "ENTRYPOINT/CMD does not pass --config"
env_config=""
for kv in "${DF_ENV[@]}"; do [ "${kv%%=*}" = MOYA_GATEWAY_CONFIG ] && env_config=${kv#*=}; done
[ -z "$env_config" ] || [ "$env_config" = "$CONFIG" ] \
    || fail "ENV MOYA_GATEWAY_CONFIG=$env_config but CMD serves --config $CONFIG"
[ -f "$ROOTFS$CONFIG" ] || fail "the configuration $CONFIG is not in the image"
[ -d "$ROOTFS$DF_WORKDIR" ] || fail "WORKDIR $DF_WORKDIR does not exist in the image"

# The user and group exist as the Dockerfile creates them, and own nothing under the configuration.
passwd_line=$(grep -E "^[^:]*:[^:]*:$RUN_UID:" "$ROOTFS/etc/passwd" || true)
group_line=$(grep -E "^[^:]*:[^:]*:$RUN_GID:" "$ROOTFS/etc/group" || true)
[ -n "$passwd_line" ] && [ -n "$group_line" ] || fail "uid $RUN_UID / gid $RUN_GID are not in the image's passwd/group"
say "  user: $passwd_line; group: $group_line"
not_root_owned=$(find "$ROOTFS$DF_WORKDIR" "$ROOTFS/usr/local/bin/moya-gateway" ! -uid 0 -o ! -gid 0 | head -3)
[ -z "$not_root_owned" ] || fail "not owned by root:root in the image: $not_root_owned"

# Ports: EXPOSE, the baked configuration's listeners, and the HEALTHCHECK's MOYA_ADMIN_PORT agree.
read -r LISTEN_PORTS ADMIN_PORT DRAIN_SECONDS < <("$PY" - "$ROOTFS$CONFIG" <<'PYTHON'
import re, sys, yaml
config = yaml.safe_load(open(sys.argv[1])) or {}
server = config.get("server") or {}
listen = server.get("listen", ["127.0.0.1:8080"])
listen = [listen] if isinstance(listen, str) else listen
admin = (config.get("admin") or {}).get("listen", "127.0.0.1:9090")
drain = str((server.get("limits") or {}).get("drain_timeout", "30s"))
m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", drain)
seconds = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)] if m else 30
print(",".join(a.rsplit(":", 1)[1] for a in listen), admin.rsplit(":", 1)[1], int(seconds + 0.999))
PYTHON
)
[ -n "${DRAIN_SECONDS:-}" ] || fail "could not read the listeners of $CONFIG"
GATEWAY_PORT=${LISTEN_PORTS%%,*}
for port in ${LISTEN_PORTS//,/ } "$ADMIN_PORT"; do
    [[ " ${DF_EXPOSE[*]} " == *" $port "* ]] || fail "the baked configuration listens on $port, EXPOSE lists ${DF_EXPOSE[*]}"
done
hc_port=""
for kv in "${DF_ENV[@]}"; do [ "${kv%%=*}" = MOYA_ADMIN_PORT ] && hc_port=${kv#*=}; done
[ "${hc_port:-9090}" = "$ADMIN_PORT" ] || fail "MOYA_ADMIN_PORT=$hc_port (HEALTHCHECK) but admin.listen port is $ADMIN_PORT"
say "  ports: gateway $LISTEN_PORTS, admin $ADMIN_PORT (EXPOSE ${DF_EXPOSE[*]}); drain_timeout ${DRAIN_SECONDS}s"

# The container's environment, as Docker builds it: PATH from the base image, HOSTNAME, HOME of the user, the ENVs.
home=$(echo "$passwd_line" | cut -d: -f6)
RUN_ENV=(PATH="$IMAGE_PATH" HOSTNAME=moya-gateway HOME="${home:-/}" "${DF_ENV[@]}")
as_user() {   # as_user ARGV...: one-off container as the image would run ARGV (USER, WORKDIR, ENV)
    C_USERSPEC=$RUN_UID:$RUN_GID C_TIMEOUT=60 container "$ROOTFS" /usr/bin/env -i -C "$DF_WORKDIR" "${RUN_ENV[@]}" "$@"
}

# Shared libraries: resolved by the rootfs's own loader (ldd inside the chroot, empty environment).
ldd_out=$(as_user ldd /usr/local/bin/moya-gateway 2>&1) || fail "ldd in the image failed: $ldd_out"
if grep -q "not found" <<<"$ldd_out"; then
    fail "libraries missing in the image: $(grep 'not found' <<<"$ldd_out" | tr -s ' \t\n' ' ')"
fi
mapfile -t LIBS < <(grep -oE '(=> )?/[^ ]+ \(0x' <<<"$ldd_out" | sed -E 's/^=> //; s/ \(0x$//' | sort -u)
[ "${#LIBS[@]}" -gt 0 ] || fail "ldd in the image listed no libraries: $ldd_out"
for lib in "${LIBS[@]}"; do
    [ -e "$ROOTFS$lib" ] || fail "$lib (ldd in the chroot) is not a file of the rootfs"
done
# Which of the image's packages provides each library (dpkg -S in the chroot, through the real path).
owners=$(as_user sh -c 'for l in "$@"; do dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l" 2>/dev/null \
    || echo "(no package): $l"; done' sh "${LIBS[@]}")
grep -q "(no package)" <<<"$owners" && fail "libraries that no package of the image provides: $owners"
LIB_PACKAGES=$(cut -d: -f1 <<<"$owners" | sort -u | tr '\n' ' ')
say "  ldd in the chroot: ${#LIBS[@]} libraries, all inside the rootfs, from: $LIB_PACKAGES"
grep -qiE 'libswift|libFoundation|libdispatch' <<<"$ldd_out" && fail "the binary needs Swift runtime libraries: $ldd_out"

version=$(as_user moya-gateway --version 2>&1) || fail "moya-gateway --version in the image: $version"
say "  moya-gateway --version in the image: $version"
check_out=$(as_user "${DF_ENTRYPOINT[@]}" check --config "$CONFIG" 2>&1) \
    || fail "moya-gateway check --config $CONFIG in the image failed: $check_out"
grep -q '^ok:' <<<"$check_out" || fail "moya-gateway check printed no ok: line: $check_out"
say "  moya-gateway check in the image (as $DF_USER): $(grep '^ok:' <<<"$check_out")"

# ---------------------------------------------------------------------------------------------------------------------
# 5. Run it.

# What every stubbed route of the baked configuration must answer: method, path, status, body file or text, length.
"$PY" - "$ROOTFS$CONFIG" > "$WORK/expectations.tsv" <<'PYTHON'
import os, re, sys, yaml
path = sys.argv[1]
config = yaml.safe_load(open(path)) or {}
upstreams = config.get("upstreams") or {}
size = {"": 1, "B": 1, "KIB": 1024, "MIB": 1024 ** 2, "KB": 1000, "MB": 1000 ** 2}
for route in config.get("routes") or []:
    stub = (upstreams.get(route.get("upstream")) or {}).get("stub")
    match = route.get("match") or {}
    methods = match.get("methods") or ["GET"]
    if stub is None or "GET" not in methods or match.get("headers") or match.get("host"):
        continue
    if "path" in match:
        url = match["path"]
    elif "path_params" in match:
        url = re.sub(r"\{[^}]+\}", "7", match["path_params"])
    elif "path_prefix" in match:
        url = match["path_prefix"]
    else:
        continue
    status = stub.get("status", 200)
    if "body_file" in stub:
        body = os.path.join(os.path.dirname(path), stub["body_file"]).replace("\t", " ")
        kind, length = "file", os.path.getsize(body)
    elif "body" in stub:
        kind, body, length = "text", stub["body"].replace("\n", "\\n"), len(stub["body"].encode())
    elif "body_bytes" in stub:
        m = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", str(stub["body_bytes"]))
        kind, body, length = "bytes", "-", int(m.group(1)) * size[m.group(2).upper()]
    else:
        kind, body, length = "none", "-", 0
    print("\t".join([route.get("name", url), url, str(status), kind, body, str(length)]))
PYTHON
[ -s "$WORK/expectations.tsv" ] || fail "no stubbed GET route in $CONFIG to test"

GW_PID="" UNSHARE_PID=""
descendant_named() {   # descendant_named PID NAME: the first process called NAME in PID's tree
    local queue=("$1") pid
    while [ "${#queue[@]}" -gt 0 ]; do
        pid=${queue[0]}; queue=("${queue[@]:1}")
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && { echo "$pid"; return 0; }
        queue+=($(cat /proc/"$pid"/task/*/children 2>/dev/null))
    done
    return 1
}
# start_gateway LOG ARGV...: runs ARGV as the namespaces' PID 1 in the background. UNSHARE_PID: the background job
# (its exit status is moya-gateway's); GW_PID: moya-gateway's PID on this host.
start_gateway() {
    local log=$1; shift
    container "$ROOTFS" "$@" >"$log" 2>&1 &
    UNSHARE_PID=$!
    PIDS+=("$UNSHARE_PID")
    local i
    for i in $(seq 100); do
        if GW_PID=$(descendant_named "$UNSHARE_PID" moya-gateway); then
            PIDS+=("$GW_PID")
            return 0
        fi
        kill -0 "$UNSHARE_PID" 2>/dev/null || { show_log "$log"; fail "the container exited before moya-gateway started"; }
        sleep 0.1
    done
    show_log "$log"; fail "moya-gateway did not start within 10 s"
}
in_container() {   # in_container ARGV...: like `docker exec -u USER`: the running container's namespaces, root, cwd
    timeout "${EXEC_TIMEOUT:-10}" nsenter --target "$GW_PID" --mount --uts --ipc --net --pid --root --wd \
        --setuid "$RUN_UID" --setgid "$RUN_GID" -- /usr/bin/env -i "${RUN_ENV[@]}" "$@"
}
healthcheck() {    # the HEALTHCHECK CMD, verbatim, with the HEALTHCHECK's --timeout
    EXEC_TIMEOUT=$DF_HC_TIMEOUT in_container "${DF_HC_ARGV[@]}" >/dev/null 2>&1
}
http() {           # http URL [curl options]: status code; body in $WORK/body. From inside the container's network.
    local url=$1; shift
    timeout 15 nsenter --target "$GW_PID" --net -- curl -sS --max-time 10 -o "$WORK/body" -w '%{http_code}' "$@" "$url" \
        2>"$WORK/curl.err" || true
}
wait_healthy() {   # HEALTHY: seconds from start to the first passing HEALTHCHECK; fails after start-period + interval*retries
    local started=$1 log=$2 limit
    limit=$(awk -v s="$DF_HC_START_PERIOD" -v i="$DF_HC_INTERVAL" -v r="$DF_HC_RETRIES" 'BEGIN { print s + i * r }')
    while :; do
        if healthcheck; then HEALTHY=$(since "$started"); return 0; fi
        kill -0 "$GW_PID" 2>/dev/null || { show_log "$log"; fail "moya-gateway exited before it was healthy"; }
        if awk -v e="$(since "$started")" -v l="$limit" 'BEGIN { exit !(e > l) }'; then
            show_log "$log"; fail "HEALTHCHECK did not pass within ${limit}s (start-period + interval x retries)"
        fi
        sleep 0.2
    done
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$GW_PID/status"; }
proc_field() { awk -v f="$1:" '$1 == f { $1 = ""; sub(/^ /, ""); print }' "/proc/$GW_PID/status"; }
check_routes() {   # every stubbed route answers as configured; ROUTES: how many
    local name url status kind body length got
    ROUTES=0
    while IFS=$'\t' read -r name url status kind body length; do
        got=$(http "http://127.0.0.1:$GATEWAY_PORT$url")
        [ "$got" = "$status" ] || fail "GET $url (route $name): status $got, expected $status $(cat "$WORK/curl.err")"
        case $kind in
            file) cmp -s "$WORK/body" "$body" || fail "GET $url: body differs from $body" ;;
            text) [ "$(cat "$WORK/body")" = "$(printf '%b' "$body")" ] || fail "GET $url: body $(head -c 100 "$WORK/body")" ;;
        esac
        [ "$(stat -c %s "$WORK/body")" = "$length" ] || fail "GET $url: $(stat -c %s "$WORK/body") bytes, expected $length"
        ROUTES=$((ROUTES + 1))
    done < "$WORK/expectations.tsv"
}
# stop_gateway: STOPSIGNAL while a request to the slowest stub is in flight; that request must complete, and the
# process must exit 0 within drain_timeout. STOPPED: the seconds the stop took.
stop_gateway() {
    local log=$1 slow_url started status=0 limit
    slow_url=$(awk -F'\t' '$1 == "slow" { print $2 }' "$WORK/expectations.tsv")
    slow_url=${slow_url:-$(head -1 "$WORK/expectations.tsv" | cut -f2)}
    timeout 15 nsenter --target "$GW_PID" --net -- curl -sS --max-time 10 -o /dev/null -w '%{http_code}' \
        "http://127.0.0.1:$GATEWAY_PORT$slow_url" >"$WORK/inflight.status" 2>"$WORK/inflight.err" &
    local curl_pid=$!
    PIDS+=("$curl_pid")
    # The request is in flight once its connection is established (the stub's latency keeps it there >= 50 ms).
    local i
    for i in $(seq 50); do
        nsenter --target "$GW_PID" --net -- ss -Htn state established "( sport = :$GATEWAY_PORT )" 2>/dev/null \
            | grep -q . && break
        sleep 0.02
    done
    started=$(date +%s.%N)
    kill -s "${DF_STOPSIGNAL#SIG}" "$GW_PID"
    limit=$((DRAIN_SECONDS + 5))
    while kill -0 "$UNSHARE_PID" 2>/dev/null; do
        if awk -v e="$(since "$started")" -v l="$limit" 'BEGIN { exit !(e > l) }'; then
            show_log "$log"; fail "moya-gateway did not exit within ${limit}s of $DF_STOPSIGNAL (drain_timeout ${DRAIN_SECONDS}s)"
        fi
        sleep 0.1
    done
    wait "$UNSHARE_PID" || status=$?
    forget_pid "$UNSHARE_PID"; forget_pid "$GW_PID"
    wait "$curl_pid" || true
    forget_pid "$curl_pid"
    [ "$status" = 0 ] || { show_log "$log"; fail "moya-gateway exited with status $status after $DF_STOPSIGNAL (expected 0)"; }
    [ "$(cat "$WORK/inflight.status")" = 200 ] \
        || fail "the request in flight at $DF_STOPSIGNAL got '$(cat "$WORK/inflight.status")' $(cat "$WORK/inflight.err"), expected 200"
    STOPPED=$(since "$started")
}

say "run: ${IMAGE_ARGV[*]} as $DF_USER in $DF_WORKDIR (own network namespace: ports as baked, host ports untouched)"
run_started=$(date +%s.%N)
C_USERSPEC=$RUN_UID:$RUN_GID start_gateway "$LOGS/gateway.log" /usr/bin/env -i -C "$DF_WORKDIR" "${RUN_ENV[@]}" \
    "${IMAGE_ARGV[@]}"
wait_healthy "$run_started" "$LOGS/gateway.log"
HEALTHY_SECONDS=$HEALTHY
say "  HEALTHCHECK (verbatim, as $DF_USER, bash of the image) passed ${HEALTHY_SECONDS}s after start"
sleep 2
RSS_IDLE_KB=$(rss_kb)
say "  RSS idle: $RSS_IDLE_KB kB; PID in its namespace: $(proc_field NSpid | awk '{print $NF}')"

uids=$(proc_field Uid) gids=$(proc_field Gid) groups=$(proc_field Groups) capeff=$(proc_field CapEff)
[ "$(echo $uids)" = "$RUN_UID $RUN_UID $RUN_UID $RUN_UID" ] || fail "process uids are $uids, expected $RUN_UID"
[ "$(echo $gids)" = "$RUN_GID $RUN_GID $RUN_GID $RUN_GID" ] || fail "process gids are $gids, expected $RUN_GID"
for g in $groups; do [ "$g" = "$RUN_GID" ] || fail "process has supplementary group $g (groups: $groups)"; done
[ "$capeff" = 0000000000000000 ] || fail "process has effective capabilities $capeff"
say "  process: uid $RUN_UID, gid $RUN_GID, no other group, no effective capabilities"

exec_id=$(in_container id -u 2>&1) && [ "$exec_id" = "$RUN_UID" ] || fail "cannot exec into the container as $DF_USER: $exec_id"
if write_out=$(in_container sh -c "touch '$DF_WORKDIR/.verify-image-write-test'" 2>&1); then
    fail "the image user can create files in $DF_WORKDIR"
fi
grep -q "Permission denied" <<<"$write_out" || fail "creating a file in $DF_WORKDIR failed, but not for permissions: $write_out"
writable=$(in_container find "$DF_WORKDIR" -writable 2>&1) || fail "find -writable in the container failed: $writable"
[ -z "$writable" ] || fail "writable by the image user: $writable"
say "  $DF_WORKDIR is not writable by the image user (files root:root, no write permission)"

status=$(http "http://127.0.0.1:$ADMIN_PORT/readyz")
[ "$status" = 200 ] || fail "GET /readyz on the admin port: $status"
status=$(http "http://127.0.0.1:$ADMIN_PORT/metrics")
[ "$status" = 200 ] && grep -q '^# TYPE' "$WORK/body" || fail "GET /metrics on the admin port: $status"
check_routes
say "  $ROUTES stubbed routes answer as configured (status, body), e.g. $(head -1 "$WORK/expectations.tsv" | cut -f2,3 | tr '\t' ' ')"
status=$(http "http://127.0.0.1:$GATEWAY_PORT$(head -1 "$WORK/expectations.tsv" | cut -f2)" --http2-prior-knowledge)
[ "$status" = 200 ] || fail "h2c (prior knowledge) request: $status $(cat "$WORK/curl.err")"
status=$(http "http://127.0.0.1:$GATEWAY_PORT/verify-image-no-such-route")
[ "$status" = 404 ] || fail "an unrouted path answered $status, expected 404"
say "  h2c prior knowledge: 200; unrouted path: 404; admin /readyz 200, /metrics 200"
sleep 1
RSS_AFTER_KB=$(rss_kb)
stop_gateway "$LOGS/gateway.log"
STOP_SECONDS=$STOPPED
say "  $DF_STOPSIGNAL with a request in flight: the request completed (200), exit 0 after ${STOP_SECONDS}s"
if grep -qE '"level" *: *"(error|critical)"' "$LOGS/gateway.log"; then
    say "  NOTE: the gateway logged errors:"; grep -E '"level" *: *"(error|critical)"' "$LOGS/gateway.log" | head -5 | sed 's/^/    /'
fi

# ---------------------------------------------------------------------------------------------------------------------
# 6. Once more as compose.yaml's gateway service runs it.
compose_settings=$("$PY" - "$COMPOSE" "$WORK" <<'PYTHON'
import os, shlex, shutil, sys, yaml
path = sys.argv[1]
service = (yaml.safe_load(open(path)) or {}).get("services", {}).get("gateway") or {}
base = os.path.dirname(os.path.abspath(path))
binds = []
for volume in service.get("volumes") or []:
    source, target, *mode = str(volume).split(":")
    if not source.startswith((".", "/")):
        # A named volume: a fresh, empty directory of its own, world-writable like the /tmp a volume starts from.
        source = os.path.join(sys.argv[2], "volumes", source)
        shutil.rmtree(source, ignore_errors=True)
        os.makedirs(source)
        os.chmod(source, 0o1777)
    binds.append(f"{os.path.normpath(os.path.join(base, source))}:{target}:{(mode or ['rw'])[0]}")
env = service.get("environment") or {}
env = [f"{k}={v}" for k, v in env.items()] if isinstance(env, dict) else list(env)
nofile = ((service.get("ulimits") or {}).get("nofile") or {})
nofile = f"{nofile['soft']}:{nofile['hard']}" if isinstance(nofile, dict) and nofile else (str(nofile) if nofile else "")
print("COMPOSE_COMMAND=(" + " ".join(shlex.quote(c) for c in service.get("command") or []) + ")")
print("COMPOSE_ENV=(" + " ".join(shlex.quote(e) for e in env) + ")")
print("COMPOSE_BINDS=" + shlex.quote("\n".join(binds)))
print("COMPOSE_READ_ONLY=" + ("1" if service.get("read_only") else "0"))
print("COMPOSE_CAP_DROP_ALL=" + ("1" if "ALL" in (service.get("cap_drop") or []) else "0"))
print("COMPOSE_NO_NEW_PRIVS=" + ("1" if any(str(o).startswith("no-new-privileges") and not str(o).endswith("false")
                                           for o in service.get("security_opt") or []) else "0"))
print("COMPOSE_NOFILE=" + shlex.quote(nofile))
print("COMPOSE_STOP_SIGNAL=" + shlex.quote(str(service.get("stop_signal", ""))))
PYTHON
) || fail "could not read $COMPOSE"
eval "$compose_settings"
[ -z "$COMPOSE_STOP_SIGNAL" ] || [ "$COMPOSE_STOP_SIGNAL" = "$DF_STOPSIGNAL" ] \
    || fail "compose stop_signal $COMPOSE_STOP_SIGNAL differs from the Dockerfile's STOPSIGNAL $DF_STOPSIGNAL"
COMPOSE_ARGV=("${DF_ENTRYPOINT[@]}" "${DF_CMD[@]}")
[ "${#COMPOSE_COMMAND[@]}" -eq 0 ] || COMPOSE_ARGV=("${DF_ENTRYPOINT[@]}" "${COMPOSE_COMMAND[@]}")
COMPOSE_RUN_ENV=("${RUN_ENV[@]}" "${COMPOSE_ENV[@]}")
privs=(/usr/bin/setpriv --reuid="$RUN_UID" --regid="$RUN_GID" --clear-groups)
[ "$COMPOSE_CAP_DROP_ALL" = 1 ] && privs+=(--bounding-set=-all --inh-caps=-all)
[ "$COMPOSE_NO_NEW_PRIVS" = 1 ] && privs+=(--no-new-privs)
NOFILE_NOTE=""
if [ -n "$COMPOSE_NOFILE" ] && ! (ulimit -H -n "${COMPOSE_NOFILE#*:}") 2>/dev/null; then
    # Raising the hard limit needs CAP_SYS_RESOURCE, which dockerd has and this machine may not give us.
    hard=$(ulimit -H -n)
    NOFILE_NOTE=" (this machine allows at most $hard: tested with $hard)"
    soft=${COMPOSE_NOFILE%%:*}; [ "$soft" -le "$hard" ] || soft=$hard
    COMPOSE_NOFILE=$soft:$hard
fi
say "compose service: read_only=$COMPOSE_READ_ONLY cap_drop ALL=$COMPOSE_CAP_DROP_ALL no-new-privileges=$COMPOSE_NO_NEW_PRIVS nofile=${COMPOSE_NOFILE:-inherited}$NOFILE_NOTE"
while IFS= read -r bind; do [ -n "$bind" ] && say "  bind mount ${bind}"; done <<<"$COMPOSE_BINDS"
run_started=$(date +%s.%N)
C_RO=$COMPOSE_READ_ONLY C_BINDS=$COMPOSE_BINDS C_NOFILE=$COMPOSE_NOFILE \
    start_gateway "$LOGS/gateway-compose.log" "${privs[@]}" -- /usr/bin/env -i -C "$DF_WORKDIR" "${COMPOSE_RUN_ENV[@]}" \
    "${COMPOSE_ARGV[@]}"
wait_healthy "$run_started" "$LOGS/gateway-compose.log"
COMPOSE_HEALTHY_SECONDS=$HEALTHY
say "  HEALTHCHECK passed ${COMPOSE_HEALTHY_SECONDS}s after start"
[ "$(proc_field CapBnd)" = 0000000000000000 ] || [ "$COMPOSE_CAP_DROP_ALL" = 0 ] || fail "capability bounding set is $(proc_field CapBnd)"
[ "$(proc_field NoNewPrivs)" = 1 ] || [ "$COMPOSE_NO_NEW_PRIVS" = 0 ] || fail "no_new_privs is not set"
if [ "$COMPOSE_READ_ONLY" = 1 ] && in_container sh -c ': > /.verify-image-write-test' 2>/dev/null; then
    fail "read_only: true, but the root filesystem is writable"
fi
if [ -n "$COMPOSE_NOFILE" ]; then
    [ "$(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$GW_PID/limits")" = "$COMPOSE_NOFILE" ] \
        || fail "nofile limit is $(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$GW_PID/limits"), expected $COMPOSE_NOFILE"
fi
check_routes
say "  $ROUTES stubbed routes answer as configured; root filesystem read-only, no capabilities, no_new_privs"
stop_gateway "$LOGS/gateway-compose.log"
COMPOSE_STOP_SECONDS=$STOPPED
say "  $DF_STOPSIGNAL with a request in flight: completed, exit 0 after ${COMPOSE_STOP_SECONDS}s"

# ---------------------------------------------------------------------------------------------------------------------
# 7. Numbers.
TOTAL_SECONDS=$(since "$START")
{
    echo "date: $(date -u '+%F %T UTC')"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (dirty)')"
    echo "binary: $SIZE_BINARY bytes ($(mb "$SIZE_BINARY")); /out tree: $(mb "$SIZE_OUT")"
    echo "base rootfs ($DF_RUNTIME_BASE stand-in): $(mb "$SIZE_BASE"); after the RUN layer: $(mb "$SIZE_LAYER"); image: $(mb "$SIZE_IMAGE")"
    echo "libraries: ${#LIBS[@]} from packages: $LIB_PACKAGES"
    echo "time to healthy: ${HEALTHY_SECONDS}s (image), ${COMPOSE_HEALTHY_SECONDS}s (compose settings)"
    echo "RSS: ${RSS_IDLE_KB} kB idle after start, ${RSS_AFTER_KB} kB after the test requests"
    echo "stop: ${STOP_SECONDS}s (image), ${COMPOSE_STOP_SECONDS}s (compose) from $DF_STOPSIGNAL to exit 0"
    echo "durations: build stage ${BUILD_SECONDS}s, runtime stage ${RUNTIME_SECONDS}s, total ${TOTAL_SECONDS}s"
} > "$WORK/last-run.txt"
sed 's/^/verify-image: /' "$WORK/last-run.txt"
say "OK: the image builds, runs as $DF_USER, passes its HEALTHCHECK, serves its stubbed routes and stops cleanly"
