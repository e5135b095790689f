#!/usr/bin/env bash
# Finds or builds helm, which the chart's tests need (test/helm.test.ts lints charts/npu-fault,
# renders it against `kubectl kustomize k8s`, and installs, upgrades and uninstalls it on the
# test plane).
#
# Order: $NPU_FAULT_HELM if set; the pinned build in the cache; a Helm 4 `helm` on PATH (an
# older major renders and lints differently, so it is passed over); else a build of the pinned
# release from Go modules with the machine's own toolchain, cached like the control plane
# (hack/build-control-plane.sh) so only the first run pays for it.
#
# Usage: hack/build-helm.sh        prints the helm path on its last line
# Env:   NPU_FAULT_CACHE (default ~/.cache/npu-fault), HELM_VERSION, NPU_FAULT_HELM
set -euo pipefail

# Helm v4.3.2 (the module is helm.sh/helm/v4): its go.mod needs Go >= 1.26.0. Override it to
# build another v4 release.
HELM_VERSION=${HELM_VERSION:-v4.3.2}
HELM_GO_MINOR=26
CACHE_ROOT=${NPU_FAULT_CACHE:-${XDG_CACHE_HOME:-${HOME:?set HOME or NPU_FAULT_CACHE}/.cache}/npu-fault}
BIN_DIR="$CACHE_ROOT/helm/$HELM_VERSION/bin"
HELM="$BIN_DIR/helm"

log() { printf '[build-helm] %s\n' "$*" >&2; }

if [ -n "${NPU_FAULT_HELM:-}" ]; then
  [ -x "$NPU_FAULT_HELM" ] || { echo "error: NPU_FAULT_HELM=$NPU_FAULT_HELM is not an executable file" >&2; exit 3; }
  echo "$NPU_FAULT_HELM"; exit 0
fi
# A warm cache or an installed Helm 4 needs no Go at all.
if [ -x "$HELM" ]; then echo "$HELM"; exit 0; fi
if command -v helm >/dev/null 2>&1; then
  case "$(helm version --short 2>/dev/null || true)" in v4.*) command -v helm; exit 0 ;; esac
fi

# shellcheck source=hack/go-tool-build.sh
. "${BASH_SOURCE[0]%/*}/go-tool-build.sh"
require_go "$HELM_GO_MINOR" "helm 4" "install Helm 4 (https://helm.sh/docs/intro/install/), or point NPU_FAULT_HELM at one"

mkdir -p "$BIN_DIR"
start=$(date +%s)
log "building helm from helm.sh/helm/v4 $HELM_VERSION"
enter_wrapper_module helm "$HELM_GO_MINOR"
go get "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2
# `helm version` reads these (helm's own Makefile sets them the same way); without them it
# reports v4.x-dev-ish defaults.
version_pkg=helm.sh/helm/v4/internal/version
go build -trimpath -ldflags "-s -w -X $version_pkg.version=$HELM_VERSION -X $version_pkg.gitTreeState=clean" \
  -o "$HELM.tmp.$$" helm.sh/helm/v4/cmd/helm >&2
# A per-process temporary name: two test workers building at once each rename atomically.
mv "$HELM.tmp.$$" "$HELM"

log "done in $(( $(date +%s) - start ))s -> $HELM"
echo "$HELM"
