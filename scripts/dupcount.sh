#!/bin/sh
# Issue 25's duplication count: `duplicates --most 200` over a revision of this repository (default
# HEAD; WT = the working tree) outside generated code (bpf2go's *_bpfel.go) and fixtures (tests/fixtures
# data, testdata), with the specs inside Go's grouped `import ( … )` blanked, line numbers kept — the
# tool passes over import lines (its --help) but does not recognise those, so two Go files sharing
# eight import lines would count as a pair. STRIP=0 keeps them (the older count). Prints the tool's
# first line (the pair count); the whole list goes to OUT (default: standard output after it).
#   scripts/dupcount.sh [REV|WT] [OUT]
# `duplicates` is the team's tool (docs/testing.md, "Duplication"); this script only prepares the tree.
set -eu
rev=${1:-HEAD}; out=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/wirelab-dupcount.XXXXXX); trap 'rm -rf "$tmp"' EXIT INT TERM
d=$tmp/tree; mkdir -p "$d"
cd "$repo"
if [ "$rev" = WT ]; then
  git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$d"
else
  git archive "$rev" | tar -xf - -C "$d"
fi
find "$d" -name '*_bpfel.go' -delete
[ -d "$d/tests/fixtures" ] && find "$d/tests/fixtures" -type f ! -name '*.py' -delete
find "$d" -type d -name testdata -prune -exec rm -rf {} +
if [ "${STRIP:-1}" = 1 ]; then
  find "$d" -name '*.go' -exec perl -0pi -e 's{^import \((.*?)^\)}{my $b=$1; $b =~ s/[^\n]//g; "import (" . $b . ")"}gmse' {} +
fi
(cd "$d" && duplicates --most 200 --seconds 400) > "$tmp/list" 2>&1
head -1 "$tmp/list"
if [ -n "$out" ]; then cp "$tmp/list" "$out"; else tail -n +2 "$tmp/list"; fi
