#!/usr/bin/env bash
# Records the dependency graph of every corpus page with Chromium through an emulated path
# (study W's wang-epload profile: 20 ms RTT, 10 Mbit/s) and writes engine/page/recorded/NAME.json,
# which the engine embeds (engine/page/recorded.go). Needs root and Chromium. Rebuild afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=${ENGINE:-bin/wirelab-engine}
PROFILE=${PROFILE:-wang-epload}
[ -x "$ENGINE" ] || make build
names=$("$ENGINE" pages ls | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["corpus"]))')
for name in $names; do
  "$ENGINE" pages record "$name" --net "$PROFILE" --proto h2 --seed 1 --out "engine/page/recorded/$name.json"
done
