#!/usr/bin/env bash
# Installs the system packages, builds the gateway and runs it on the shipped Configuration/ (stubbed upstreams only).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product moya-gateway
# malloc's per-thread cache as the shipped image and unit set it (docs/operations.md, "Sizing"), unless set already.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.tcache_count=64}"
# GnuTLS (loaded by libcurl, which the gateway never calls) left uninitialised, as the image and unit set it.
export GNUTLS_NO_IMPLICIT_INIT="${GNUTLS_NO_IMPLICIT_INIT:-1}"
exec .build/release/moya-gateway serve --config "${MOYA_GATEWAY_CONFIG:-Configuration/gateway.yaml}" "$@"
