#!/usr/bin/env bash
# Installs the Debian packages MoyaGateway builds and tests with. Safe to run again; skips what is present.
set -euo pipefail
packages=(libssl-dev libnghttp2-dev zlib1g-dev pkg-config)
if [ "${1:-}" = "--test" ]; then
    # Tests talk to real peers: curl, nginx (interop and benchmarks), openssl (certificates, s_client),
    # nghttp2-client (nghttp, h2load), Python's h11/h2 for hostile-peer suites, websockets for the WebSocket relay.
    packages+=(curl logrotate nginx-light openssl nghttp2-client python3 python3-h11 python3-h2 python3-websockets python3-yaml python3-venv netcat-openbsd)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
