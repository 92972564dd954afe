#!/usr/bin/env bash
# Installs the Debian packages wirelab needs. Idempotent: does nothing when all are present.
# Used by `make setup`; safe to run by hand. Needs root (or sudo) only when something is missing.
#
# The servers under test (apache2, nginx, h2o, caddy) run only inside a run's server namespace,
# with the configuration wirelab generated: their packages' own system services are stopped and
# disabled here, so that nothing of theirs listens outside a run — also on a machine where
# installing a package starts its service.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t pkgs < <(grep -v '^\s*#' "$here/apt-packages.txt" | awk 'NF{print $1}')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Stop and disable the servers' system services (their units, and any daemon their init scripts
# started from the packages' own configuration).
services=(apache2 apache-htcacheclean nginx h2o caddy caddy-api)
if command -v systemctl >/dev/null 2>&1; then
  for s in "${services[@]}"; do
    # (a unit that does not exist is an error systemctl reports, and nothing to do here)
    if [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now "$s.service" >/dev/null 2>&1 || true
    else
      $SUDO systemctl disable "$s.service" >/dev/null 2>&1 || true # systemd not running: unit links only
    fi
  done
fi
for s in "${services[@]}"; do
  if [ -x "/etc/init.d/$s" ]; then
    $SUDO "/etc/init.d/$s" stop >/dev/null 2>&1 || true
    command -v update-rc.d >/dev/null 2>&1 && $SUDO update-rc.d "$s" disable >/dev/null 2>&1 || true
  fi
done
# A server the package left running from its default configuration (its pid file says which):
# never one of a wirelab run, whose servers keep their pid files in the run's private directory.
for pidfile in /run/apache2/apache2.pid /run/nginx.pid /run/h2o.pid; do
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    [ -n "$pid" ] && $SUDO kill "$pid" 2>/dev/null || true
  fi
done
