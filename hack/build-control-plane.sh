#!/usr/bin/env bash
# Builds a pinned Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl, kwok) from Go modules with the machine's own Go toolchain, and caches the
# binaries by version outside the repository so only the first run pays for the build.
#
# Usage: hack/build-control-plane.sh        prints the bin directory on its last line
# Env:   NPU_FAULT_CACHE (default ~/.cache/npu-fault), K8S_VERSION, ETCD_VERSION, KWOK_VERSION
set -euo pipefail

# The pins are the newest releases whose go.mod (and whose dependencies') a Go 1.24 toolchain
# accepts: etcd v3.6.10+ and kwok v0.8+ need Go 1.25/1.26. Override them on a newer Go.

K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
CACHE_ROOT=${NPU_FAULT_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or NPU_FAULT_CACHE}/.cache}/npu-fault}
BIN_DIR="$CACHE_ROOT/k8s/$K8S_VERSION-etcd$ETCD_VERSION-kwok$KWOK_VERSION/bin"
WANTED=(etcd kube-apiserver kube-controller-manager kubectl kwok kwok-stages.yaml)

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

# A warm cache needs no Go at all.
all_present() { for b in "${WANTED[@]}"; do [ -s "$BIN_DIR/$b" ] || return 1; done; }
if all_present; then echo "$BIN_DIR"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed (no 'go' on PATH). The local control plane is built from Go modules: install Go >= 1.24 (https://go.dev/doc/install; on Debian/Ubuntu 'apt-get install golang-go' if it is new enough) and put it on PATH (e.g. export PATH=\$PATH:/usr/local/go/bin), or run the integration tests against an existing cluster: NPU_FAULT_USE_EXISTING_CLUSTER=true KUBECONFIG=... npm run test:integration" >&2
  exit 3
fi
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -n "$go_minor" ] && [ "$go_minor" -lt 24 ]; then
  echo "error: $(go env GOVERSION) is too old: the control plane needs Go >= 1.24 (GOTOOLCHAIN=local: no toolchain download)" >&2
  exit 3
fi
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0


mkdir -p "$BIN_DIR"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/npu-fault-cp-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)

# --- etcd: a tiny wrapper module (go install of etcd fails on its replace directives) ---
if [ ! -x "$BIN_DIR/etcd" ]; then
  log "building etcd $ETCD_VERSION"
  mkdir -p "$WORK/etcd" && cd "$WORK/etcd"
  cat > go.mod <<GOMOD
module npu-fault.local/etcd-wrapper

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
  cat > main.go <<'GO'
// Command etcd runs the etcd server from go.etcd.io/etcd/server/v3 unchanged.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go mod tidy >&2
  go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/etcd.tmp" . >&2
  mv "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
fi

# --- kwok ---
if [ ! -x "$BIN_DIR/kwok" ]; then
  log "building kwok $KWOK_VERSION"
  GOBIN="$WORK/kwok-bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
  mv "$WORK/kwok-bin/kwok" "$BIN_DIR/kwok"
fi

# --- kwok's own fast node and pod stages, read from the same kwok module release (not vendored) ---
if [ ! -s "$BIN_DIR/kwok-stages.yaml" ]; then
  kwok_dir=$(cd "$WORK" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  stage_dir="$kwok_dir/kustomize/stage"
  for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    [ -f "$stage_dir/$f" ] || { echo "error: kwok $KWOK_VERSION has no stage file $f" >&2; exit 1; }
    printf -- '---\n'; cat "$stage_dir/$f"
  done > "$BIN_DIR/kwok-stages.yaml.tmp"
  mv "$BIN_DIR/kwok-stages.yaml.tmp" "$BIN_DIR/kwok-stages.yaml"
fi

# --- kube-apiserver, kube-controller-manager, kubectl: wrapper module that replaces every
# staging module k8s.io/* with the matching published v0.x.y, generated from
# k8s.io/kubernetes's own go.mod as served by the module proxy ---
if [ ! -x "$BIN_DIR/kube-apiserver" ] || [ ! -x "$BIN_DIR/kube-controller-manager" ] || [ ! -x "$BIN_DIR/kubectl" ]; then
  log "building kube-apiserver, kube-controller-manager, kubectl $K8S_VERSION"
  mkdir -p "$WORK/k8s" && cd "$WORK/k8s"
  upstream_mod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$upstream_mod" ] || { echo "error: could not download k8s.io/kubernetes@$K8S_VERSION go.mod" >&2; exit 1; }
  staging_version="v0.${K8S_VERSION#v1.}"
  {
    echo "module npu-fault.local/k8s-wrapper"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.N.M"
    sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/k8s\.io/.*#\t\1 => \1 '"$staging_version"'#p' "$upstream_mod"
    echo ")"
  } > go.mod
  grep -q '=> k8s.io/api ' go.mod || { echo "error: no staging replaces found in $upstream_mod" >&2; exit 1; }
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the Kubernetes commands this wrapper builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  go mod tidy >&2
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  for cmd in kube-apiserver kube-controller-manager kubectl; do
    log "  go build $cmd"
    go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd" >&2
    mv "$BIN_DIR/$cmd.tmp" "$BIN_DIR/$cmd"
  done
fi

log "done in $(( $(date +%s) - start ))s -> $BIN_DIR"
echo "$BIN_DIR"
