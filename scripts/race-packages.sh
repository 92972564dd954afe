#!/usr/bin/env bash
# Prints the engine packages that `make test`'s go-race phase runs under the race detector
# (docs/testing.md, "go-race: which packages"): those whose tests need no root (none imports
# internal/roottest — namespaces, TUN devices, BPF and real-time scheduling do not mix with the
# detector's 2–20× slowdown) and that have concurrency of their own to race — their code or their
# tests start a goroutine (`go func`, `go f(`) or import sync or sync/atomic. A package with neither
# runs its code on one goroutine: the detector has no second access to see, and the go phase has
# already run its tests. Packages without tests are left out.
set -euo pipefail
cd "$(dirname "$0")/../engine"
mod=github.com/wirelab/wirelab/engine
go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}{{end}}' ./... | grep . |
while IFS='|' read -r pkg dir files imports; do
  [[ " $imports " == *" $mod/internal/roottest "* ]] && continue
  # each file read whole (no grep -q: under pipefail, sed's SIGPIPE would make a match a miss)
  if [[ " $imports " == *" sync "* || " $imports " == *" sync/atomic "* ]] ||
     (cd "$dir" && sed 's|//.*||' $files /dev/null | grep -E '(^|[[:space:];{])go (func|[A-Za-z_][A-Za-z0-9_.]*\()' >/dev/null); then
    echo "$pkg"
  fi
done
exit 0
