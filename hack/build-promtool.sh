#!/usr/bin/env bash
# Finds or builds promtool (Prometheus's rule checker and unit-test runner), which the
# monitoring tests need (test/monitoring.test.ts checks k8s/monitoring/ with it).
#
# Order: $NPU_FAULT_PROMTOOL if set; the pinned build in the cache; `promtool` on PATH
# (Debian's `prometheus` package ships one); else a build of the pinned release from Go
# modules with the machine's own toolchain, cached like the control plane
# (hack/build-control-plane.sh) so only the first run pays for it.
#
# Usage: hack/build-promtool.sh        prints the promtool path on its last line
# Env:   NPU_FAULT_CACHE (default ~/.cache/npu-fault), PROMETHEUS_VERSION, NPU_FAULT_PROMTOOL
set -euo pipefail

# Prometheus v3.8.1 (Go module versions are v0.<major><minor>.<patch>): the newest release whose
# go.mod a Go 1.24 toolchain accepts (v0.309.1 needs Go 1.24.9, v0.310+ Go 1.25), matching the
# control plane's floor. Override it on a newer Go.
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.308.1}
CACHE_ROOT=${NPU_FAULT_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or NPU_FAULT_CACHE}/.cache}/npu-fault}
BIN_DIR="$CACHE_ROOT/promtool/$PROMETHEUS_VERSION"
PROMTOOL="$BIN_DIR/promtool"

log() { printf '[build-promtool] %s\n' "$*" >&2; }

if [ -n "${NPU_FAULT_PROMTOOL:-}" ]; then
  [ -x "$NPU_FAULT_PROMTOOL" ] || { echo "error: NPU_FAULT_PROMTOOL=$NPU_FAULT_PROMTOOL is not an executable file" >&2; exit 3; }
  echo "$NPU_FAULT_PROMTOOL"; exit 0
fi
# A warm cache or a packaged promtool needs no Go at all.
if [ -x "$PROMTOOL" ]; then echo "$PROMTOOL"; exit 0; fi
if command -v promtool >/dev/null 2>&1; then command -v promtool; exit 0; fi

# shellcheck source=hack/go-tool-build.sh
. "${BASH_SOURCE[0]%/*}/go-tool-build.sh"
require_go 24 promtool "install promtool (Debian/Ubuntu: 'apt-get install prometheus'), or point NPU_FAULT_PROMTOOL at one"

mkdir -p "$BIN_DIR"
start=$(date +%s)
log "building promtool from github.com/prometheus/prometheus $PROMETHEUS_VERSION"

# Prometheus's go.mod has exclude directives, which `go install …@version` refuses (hence the
# wrapper module); the excluded versions are years older than what it requires. Its
# service-discovery plugins (every cloud SDK) come along: a build tag leaves them out only from
# v3.10 on, which needs Go >= 1.25.
enter_wrapper_module promtool 24
go get "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" >&2
# `promtool --version` names the release: v0.308.1 is Prometheus 3.8.1.
release=${PROMETHEUS_VERSION#v0.}
release="$(( ${release%%.*} / 100 )).$(( 10#${release%%.*} % 100 )).${release#*.}"
version_pkg=github.com/prometheus/common/version
go build -trimpath -ldflags "-s -w -X $version_pkg.Version=$release -X $version_pkg.Revision=$PROMETHEUS_VERSION" \
  -o "$PROMTOOL.tmp.$$" github.com/prometheus/prometheus/cmd/promtool >&2
# A per-process temporary name: two test workers building at once each rename atomically.
mv "$PROMTOOL.tmp.$$" "$PROMTOOL"

log "done in $(( $(date +%s) - start ))s -> $PROMTOOL"
echo "$PROMTOOL"
