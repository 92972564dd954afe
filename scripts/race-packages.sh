#!/usr/bin/env bash
# Prints the engine packages that `make test`'s go-race phase runs under the race detector
# (docs/testing.md, "go-race: which packages"): those whose tests need no root (none imports
# internal/roottest — namespaces, TUN devices, BPF and real-time scheduling do not mix with the
# detector's 2–20× slowdown) and that have concurrency of their own to race — their code or their
# tests start a goroutine (a `go` statement) or import sync or sync/atomic. A package with neither
# runs its code on one goroutine: the detector has no second access to see, and the go phase has
# already run its tests. Packages without tests are left out.
#
#   race-packages.sh            all of them
#   race-packages.sh timed      those whose tests hold a timing bound (import internal/timebound),
#                               and loadgen, whose tests check what real loads of 1.5 s measured
#                               per 0.5 s interval (max pages/s > 0: under the detector at load 35
#                               no interval completed a page once): the phase runs them one at a time
#   race-packages.sh untimed    the others: the phase runs them two at a time
set -euo pipefail
want=${1:-all}
case $want in all | timed | untimed) ;; *) echo "race-packages.sh: got $want; want all, timed or untimed" >&2; exit 2 ;; esac
cd "$(dirname "$0")/../engine"
mod=github.com/wirelab/wirelab/engine
go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}{{end}}' ./... | grep . |
while IFS='|' read -r pkg dir files imports; do
  [[ " $imports " == *" $mod/internal/roottest "* ]] && continue
  if [[ " $imports " == *" sync "* || " $imports " == *" sync/atomic "* ]] ||
     (cd "$dir" && sed 's|//.*||' $files /dev/null | grep -E '(^|[[:space:];{])go (func|[A-Za-z_][A-Za-z0-9_.]*\()' >/dev/null); then
    timed=untimed
    [[ " $imports " == *" $mod/internal/timebound "* || $pkg == "$mod/loadgen" ]] && timed=timed
    [[ $want == all || $want == "$timed" ]] && echo "$pkg"
  fi
done
exit 0
