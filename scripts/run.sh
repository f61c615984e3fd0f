#!/usr/bin/env bash
# Installs the system packages, builds the gateway and runs it on the shipped Configuration/ (stubbed upstreams only).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product moya-gateway
exec .build/release/moya-gateway serve --config "${MOYA_GATEWAY_CONFIG:-Configuration/gateway.yaml}" "$@"
