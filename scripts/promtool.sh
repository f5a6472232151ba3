#!/usr/bin/env bash
# Prints the path of promtool (Prometheus's rule checker), installing it first
# from Debian's prometheus package into a cache folder outside the checkout:
#   "$(bash scripts/promtool.sh)" test rules deploy/prometheus/alerts.test.yml
# With --cached it installs nothing: it prints the cached path, or fails.
# The package is unpacked, never installed: no Prometheus server starts.
# As root the folder is /opt/plantstore (world-readable), as scripts/node-line.sh.
set -euo pipefail
if [ "$(id -u)" = 0 ]; then cache=/opt/plantstore; else cache="${XDG_CACHE_HOME:-$HOME/.cache}/plantstore"; fi
cached=$(ls -d "$cache"/prometheus-*/usr/bin/promtool 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$cached" ]; then
  [ "${1:-}" != --cached ] || { echo "promtool.sh: no promtool in $cache (run scripts/promtool.sh to install it)" >&2; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # A machine that never read the package lists finds nothing to download until it does.
  if ! (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1); then
    apt-get update >/dev/null
    (cd "$tmp" && apt-get download prometheus >/dev/null)
  fi
  deb=$(ls "$tmp"/prometheus_*.deb)
  version=$(dpkg-deb -f "$deb" Version)
  dpkg-deb -x "$deb" "$tmp/package"
  chmod -R a+rX "$tmp/package"
  mkdir -p "$cache"
  rm -rf "$cache/prometheus-$version"
  mv "$tmp/package" "$cache/prometheus-$version"
  cached="$cache/prometheus-$version/usr/bin/promtool"
fi
"$cached" --version >/dev/null 2>&1
echo "$cached"
