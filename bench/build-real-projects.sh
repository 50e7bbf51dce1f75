#!/usr/bin/env bash
# Builds real C projects from Debian source packages for the benchmarks (never run by .ci/run):
# plain ./configure && make with CFLAGS='-g -O2' (gcc 12 emits DWARF 5), into
# ${XDG_CACHE_HOME:-~/.cache}/probelens-bench/. Prints the binaries' paths. Needs root (apt) and a while.
set -euo pipefail
ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/probelens-bench"
mkdir -p "$ROOT"
cd "$ROOT"
export DEBIAN_FRONTEND=noninteractive

if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/; then
  # Mirror the existing apt sources as deb-src so `apt-get source` works.
  for f in /etc/apt/sources.list.d/*.sources; do
    grep -q '^Types: deb$' "$f" || continue
    sed 's/^Types: deb$/Types: deb-src/' "$f" > "/etc/apt/sources.list.d/probelens-src-$(basename "$f")"
  done
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends dpkg-dev bison flex libreadline-dev zlib1g-dev pkg-config >/dev/null

build() { # package, source-dir glob, configure args…, then the binary to report
  local pkg=$1 dirglob=$2 bin=$3; shift 3
  local dir
  dir=$(ls -d $dirglob 2>/dev/null | head -1 || true)
  if [ -z "$dir" ]; then
    # A mirror may lack the newest version's files (seen with a security update): try each, newest first.
    local v
    for v in $(apt-cache showsrc "$pkg" | awk '/^Version:/{print $2}' | sort -rV | uniq); do
      apt-get source -qq "$pkg=$v" >/dev/null 2>&1 && break
    done
    dir=$(ls -d $dirglob 2>/dev/null | head -1 || true)
    [ -n "$dir" ] || { echo "could not fetch the source of $pkg" >&2; exit 1; }
  fi
  if [ ! -x "$dir/$bin" ]; then
    (cd "$dir" && { [ -f config.status ] || ./configure CFLAGS='-g -O2' "$@" >/dev/null; } && make -j"$(nproc)" >/dev/null 2>&1)
  fi
  echo "$ROOT/$dir/$bin"
}

build postgresql-15 'postgresql-15-*' src/backend/postgres --without-icu --without-readline --without-zlib
