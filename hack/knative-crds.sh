#!/usr/bin/env bash
# Fetches the Knative Serving CRDs (serving.knative.dev: Service, Configuration, Revision,
# Route, DomainMapping; autoscaling.internal.knative.dev: PodAutoscaler, Metric) from the Go
# module knative.dev/serving, its config/core/300-resources/, and caches them by version
# outside the repository, like the control plane (hack/build-control-plane.sh). Nothing is
# built: `go mod download` fetches the module's source (about 2.4 MB) through the module proxy.
# test/function-manifests.test.ts loads them into the test apiserver to validate the Knative
# overlay k8s/functions/knative/.
#
# Usage: hack/knative-crds.sh        prints the directory of the CRD files on its last line
# Env:   NPU_FAULT_CACHE (default ~/.cache/npu-fault), KNATIVE_SERVING_VERSION
set -euo pipefail

# knative.dev/serving v0.47.0 is Knative Serving 1.20: its go.mod asks for Go 1.24, the
# project's floor (v0.51.0, Knative 1.24, asks for Go 1.26). Override it on a newer Go.
KNATIVE_SERVING_VERSION=${KNATIVE_SERVING_VERSION:-v0.47.0}
CACHE_ROOT=${NPU_FAULT_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or NPU_FAULT_CACHE}/.cache}/npu-fault}
CRD_DIR="$CACHE_ROOT/knative/$KNATIVE_SERVING_VERSION"

log() { printf '[knative-crds] %s\n' "$*" >&2; }

# A warm cache needs no Go at all: the directory appears only once complete (renamed into place).
if [ -s "$CRD_DIR/service.yaml" ]; then echo "$CRD_DIR"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed (no 'go' on PATH). The Knative Serving CRDs are taken from the Go module knative.dev/serving: install Go >= 1.24 (https://go.dev/doc/install; on Debian/Ubuntu 'apt-get install golang-go' if it is new enough) and put it on PATH (e.g. export PATH=\$PATH:/usr/local/go/bin)" >&2
  exit 3
fi
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -n "$go_minor" ] && [ "$go_minor" -lt 24 ]; then
  echo "error: $(go env GOVERSION) is too old: knative.dev/serving $KNATIVE_SERVING_VERSION needs Go >= 1.24 (GOTOOLCHAIN=local: no toolchain download)" >&2
  exit 3
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

mkdir -p "$CACHE_ROOT/knative"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/npu-fault-knative.XXXXXX")
# A per-process staging folder beside the target, so the final rename stays on one filesystem.
STAGE="$CRD_DIR.tmp.$$"
trap 'rm -rf "$WORK" "$STAGE"' EXIT
start=$(date +%s)
log "fetching knative.dev/serving $KNATIVE_SERVING_VERSION"

# A throwaway module: `go mod download` of one module@version wants a module to run in.
cd "$WORK"
printf 'module npu-fault.local/knative-crds\n\ngo 1.24\n' > go.mod
info=$(go mod download -json "knative.dev/serving@$KNATIVE_SERVING_VERSION" 2>&1) || {
  # Go's JSON escapes its multi-line errors; one line for the test log.
  error=$(printf '%s\n' "$info" | sed -n 's/.*"Error": "\(.*\)".*/\1/p' | head -n 1 | sed 's/\\[nt]/ /g; s/  */ /g')
  echo "error: could not download knative.dev/serving@$KNATIVE_SERVING_VERSION: ${error:-$(printf '%s' "$info" | tr '\n' ' ')}" >&2
  exit 1
}
module_dir=$(printf '%s\n' "$info" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
source_dir="$module_dir/config/core/300-resources"
[ -d "$source_dir" ] || { echo "error: knative.dev/serving $KNATIVE_SERVING_VERSION has no config/core/300-resources/" >&2; exit 1; }

mkdir -p "$STAGE"
count=0
for file in "$source_dir"/*.yaml; do
  grep -q '^kind: CustomResourceDefinition' "$file" || { echo "error: $file is not a CustomResourceDefinition" >&2; exit 1; }
  cp "$file" "$STAGE/" && chmod 644 "$STAGE/$(basename "$file")" # the module cache is read-only
  count=$((count + 1))
done
[ -s "$STAGE/service.yaml" ] || { echo "error: knative.dev/serving $KNATIVE_SERVING_VERSION has no services.serving.knative.dev CRD (config/core/300-resources/service.yaml)" >&2; exit 1; }
# Another process may have finished first: its complete copy is as good as this one.
mv -T "$STAGE" "$CRD_DIR" 2>/dev/null || [ -s "$CRD_DIR/service.yaml" ]

log "done in $(( $(date +%s) - start ))s: $count CRDs -> $CRD_DIR"
echo "$CRD_DIR"
