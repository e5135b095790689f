#!/usr/bin/env bash
# Builds a pinned Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl, kwok) from Go modules with the machine's own Go toolchain, and caches the
# binaries by version outside the repository so only the first run pays for the build.
#
# Usage: hack/build-control-plane.sh              builds (if needed); prints the bin dir last
#        hack/build-control-plane.sh --versions   prints the selected versions, builds nothing
# Env:   NPU_FAULT_K8S_VERSION  newest (default) | oldest | a row's version (v1.37.2, or 1.37)
#        NPU_FAULT_CACHE        default ~/.cache/npu-fault
#        ETCD_VERSION, KWOK_VERSION  override the row's (required for a version not listed)
# The same setting reaches every user of the plane (tests, demo, benchmarks, cluster:up):
# they all run this script. docs/operations.md says which versions are supported and why.
set -euo pipefail

# The supported Kubernetes releases, oldest first; the integration suite is run on both ends
# (docs/operations.md). Each row: the Kubernetes release, the etcd release that Kubernetes
# minor is released against (build/dependencies.yaml, kubeadm's DefaultEtcdVersion: 3.6 for
# 1.34, 3.7 for 1.37; the newest patch the module proxy serves), a kwok release, and the
# oldest Go that accepts every go.mod of the row (1.37, etcd 3.7 and kwok 0.8 say go 1.26.0).
SUPPORTED=(
  # kubernetes etcd  kwok   go
  "v1.34.4 v3.6.8 v0.7.0 1.24"
  "v1.37.2 v3.7.3 v0.8.0 1.26"
)

die_usage() {
  {
    echo "error: $1"
    echo "NPU_FAULT_K8S_VERSION is 'newest', 'oldest' or one of the releases the suite is run on:"
    for row in "${SUPPORTED[@]}"; do read -r k e w g <<<"$row"; echo "  $k (etcd $e, kwok $w, Go >= $g)"; done
    echo "Another release (a supported minor between these, say) runs with ETCD_VERSION and KWOK_VERSION set too."
  } >&2
  exit 2
}

selected=${NPU_FAULT_K8S_VERSION:-newest}
row=""
case "$selected" in
  newest) row=${SUPPORTED[${#SUPPORTED[@]}-1]} ;;
  oldest) row=${SUPPORTED[0]} ;;
  *)
    want=v${selected#v}
    [[ "$want" =~ ^v1\.[0-9]+(\.[0-9]+)?$ ]] || die_usage "NPU_FAULT_K8S_VERSION=$selected is not a release"
    for r in "${SUPPORTED[@]}"; do
      k=${r%% *}
      # An exact release, or its minor ("1.37" picks the row of v1.37.x).
      if [ "$k" = "$want" ] || [[ "$k" == "$want".* ]]; then row=$r; fi
    done
    if [ -z "$row" ]; then
      [[ "$want" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die_usage "no supported release of Kubernetes ${want#v}"
      [ -n "${ETCD_VERSION:-}" ] && [ -n "${KWOK_VERSION:-}" ] ||
        die_usage "$want is not in the table: set ETCD_VERSION and KWOK_VERSION to try it"
      row="$want $ETCD_VERSION $KWOK_VERSION 1.24"
    fi
    ;;
esac
read -r K8S_VERSION row_etcd row_kwok GO_MIN <<<"$row"
ETCD_VERSION=${ETCD_VERSION:-$row_etcd}
KWOK_VERSION=${KWOK_VERSION:-$row_kwok}
CACHE_ROOT=${NPU_FAULT_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or NPU_FAULT_CACHE}/.cache}/npu-fault}
BIN_DIR="$CACHE_ROOT/k8s/$K8S_VERSION-etcd$ETCD_VERSION-kwok$KWOK_VERSION/bin"
WANTED=(etcd kube-apiserver kube-controller-manager kubectl kwok kwok-stages.yaml)

if [ "${1:-}" = "--versions" ]; then
  printf 'kubernetes=%s\netcd=%s\nkwok=%s\ngo=%s\nbin=%s\n' "$K8S_VERSION" "$ETCD_VERSION" "$KWOK_VERSION" "$GO_MIN" "$BIN_DIR"
  exit 0
fi

log() { printf '[build-control-plane] %s\n' "$*" >&2; }

# A warm cache needs no Go at all.
all_present() { for b in "${WANTED[@]}"; do [ -s "$BIN_DIR/$b" ] || return 1; done; }
if all_present; then echo "$BIN_DIR"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is not installed (no 'go' on PATH). The local control plane (Kubernetes $K8S_VERSION) is built from Go modules: install Go >= $GO_MIN (https://go.dev/doc/install; on Debian/Ubuntu 'apt-get install golang-go' if it is new enough) and put it on PATH (e.g. export PATH=\$PATH:/usr/local/go/bin), or run the integration tests against an existing cluster: NPU_FAULT_USE_EXISTING_CLUSTER=true KUBECONFIG=... npm run test:integration" >&2
  exit 3
fi
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -n "$go_minor" ] && [ "$go_minor" -lt "${GO_MIN#1.}" ]; then
  echo "error: $(go env GOVERSION) is too old: the Kubernetes $K8S_VERSION plane needs Go >= $GO_MIN (GOTOOLCHAIN=local: no toolchain download); NPU_FAULT_K8S_VERSION=oldest may build on it" >&2
  exit 3
fi
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

mkdir -p "$BIN_DIR"
# Two runs on a cold cache (a test run and the demo, say) would both build into BIN_DIR:
# the second waits for the first, then finds the binaries there.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$BIN_DIR.lock"
  flock 9
  if all_present; then echo "$BIN_DIR"; exit 0; fi
fi
log "building the Kubernetes $K8S_VERSION plane (etcd $ETCD_VERSION, kwok $KWOK_VERSION) into $BIN_DIR"
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
