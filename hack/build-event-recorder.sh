#!/usr/bin/env bash
# Builds the Kubernetes Events baseline's recorder (bench/baselines/event-recorder/: client-go's
# own EventRecorder behind a JSON-lines stdin) with the machine's own Go toolchain, and caches
# the binary outside the repository, keyed by the module's client-go version and a hash of its
# sources, so only the first run (or a changed source) pays for the build.
#
# Usage: hack/build-event-recorder.sh        prints the binary's path on its last line
# Env:   NPU_FAULT_CACHE (default ~/.cache/npu-fault), NPU_FAULT_EVENT_RECORDER (a prebuilt binary)
set -euo pipefail

SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../bench/baselines/event-recorder" && pwd)"
CACHE_ROOT=${NPU_FAULT_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or NPU_FAULT_CACHE}/.cache}/npu-fault}

log() { printf '[build-event-recorder] %s\n' "$*" >&2; }

if [ -n "${NPU_FAULT_EVENT_RECORDER:-}" ]; then
  [ -x "$NPU_FAULT_EVENT_RECORDER" ] || { echo "error: NPU_FAULT_EVENT_RECORDER=$NPU_FAULT_EVENT_RECORDER is not an executable file" >&2; exit 3; }
  echo "$NPU_FAULT_EVENT_RECORDER"; exit 0
fi

# client-go's version names the cache entry; the sources' hash tells an edited recorder apart.
CLIENT_GO_VERSION=$(sed -n 's#^[[:space:]]*k8s\.io/client-go \(v[^ ]*\).*#\1#p' "$SRC_DIR/go.mod" | head -n1)
[ -n "$CLIENT_GO_VERSION" ] || { echo "error: $SRC_DIR/go.mod does not require k8s.io/client-go" >&2; exit 1; }
SOURCE_HASH=$(cat "$SRC_DIR/go.mod" "$SRC_DIR/go.sum" "$SRC_DIR/main.go" | sha256sum | cut -c1-12)
BIN_DIR="$CACHE_ROOT/event-recorder/client-go-$CLIENT_GO_VERSION-$SOURCE_HASH"
RECORDER="$BIN_DIR/event-recorder"

# A warm cache needs no Go at all.
if [ -x "$RECORDER" ]; then echo "$RECORDER"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed (no 'go' on PATH). The Kubernetes Events baseline runs client-go's EventRecorder, built once from Go modules: install Go >= 1.24 (https://go.dev/doc/install) and put it on PATH (e.g. export PATH=\$PATH:/usr/local/go/bin), or point NPU_FAULT_EVENT_RECORDER at a built bench/baselines/event-recorder" >&2
  exit 3
fi
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -n "$go_minor" ] && [ "$go_minor" -lt 24 ]; then
  echo "error: $(go env GOVERSION) is too old: the event recorder (client-go $CLIENT_GO_VERSION) needs Go >= 1.24 (GOTOOLCHAIN=local: no toolchain download)" >&2
  exit 3
fi
# -mod=readonly: the committed go.sum is the pin; a build never rewrites the repository's files.
export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0

mkdir -p "$BIN_DIR"
start=$(date +%s)
log "building event-recorder (client-go $CLIENT_GO_VERSION)"
cd "$SRC_DIR"
go build -trimpath -ldflags "-s -w" -o "$RECORDER.tmp.$$" . >&2
# A per-process temporary name: two test workers building at once each rename atomically.
mv "$RECORDER.tmp.$$" "$RECORDER"

log "done in $(( $(date +%s) - start ))s -> $RECORDER"
echo "$RECORDER"
