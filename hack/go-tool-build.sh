# Shared by the scripts that build a pinned Go tool once into the project cache
# (build-promtool.sh, build-helm.sh): sourced, not run.

# require_go MINOR WHAT ALTERNATIVE: exits 3 with one line naming what to install when Go is
# missing or older than 1.MINOR (GOTOOLCHAIN=local: no toolchain download), then sets the
# environment of a reproducible static build.
require_go() {
  local minor=$1 what=$2 alternative=$3 have
  if ! command -v go >/dev/null 2>&1; then
    echo "error: $what not found and Go is not installed (no 'go' on PATH): install Go >= 1.$minor (https://go.dev/doc/install) so it is built once from Go modules, or $alternative" >&2
    exit 3
  fi
  have=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  if [ -n "$have" ] && [ "$have" -lt "$minor" ]; then
    echo "error: $(go env GOVERSION) is too old: $what needs Go >= 1.$minor (GOTOOLCHAIN=local: no toolchain download); or $alternative" >&2
    exit 3
  fi
  export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
}

# enter_wrapper_module NAME GO_MINOR: cd into a fresh temporary directory (removed on exit)
# holding the go.mod of a wrapper module npu-fault.local/NAME-wrapper. Requiring the tool's
# module there and building its command resolves the versions the tool's own go.mod pins;
# `go install …@version` would too, but refuses modules with replace or exclude directives.
enter_wrapper_module() {
  local name=$1 minor=$2
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/npu-fault-$name-build.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  cd "$WORK"
  printf 'module npu-fault.local/%s-wrapper\n\ngo 1.%s.0\n' "$name" "$minor" > go.mod
}
