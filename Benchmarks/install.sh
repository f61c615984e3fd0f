#!/usr/bin/env bash
# Installs the benchmarks' peers and load tools from Debian's apt (as root; idempotent) and prints their versions:
# nginx (nginx-light), HAProxy, Varnish, Caddy, wrk, h2load (nghttp2-client). Nothing is started or enabled: every
# benchmark runs its own instances with its own configuration from Benchmarks/conf/ under its RUN_DIR. The scripts
# install what they miss themselves when run as root; this does it for all of them at once.
set -euo pipefail
export RUN_DIR="${RUN_DIR:-/tmp/moyabench-install}"
# shellcheck source=Benchmarks/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need nginx haproxy varnishd caddy wrk h2load curl openssl taskset ss
versions
