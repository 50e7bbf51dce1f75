#!/usr/bin/env bash
# Builds the real projects the benchmarks use (never run by .ci/run): PostgreSQL 15 from Debian's source package
# (./configure CFLAGS='-g -O2', gcc 12 emits DWARF 5), by the corpus builder of the test tier, into
# ${XDG_CACHE_HOME:-~/.cache}/probelens-test/corpus/ (shared with the corpus tests). Needs deb-src lines and the
# build dependencies .ci/run installs. Prints the binaries' paths.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx test/helpers/corpus.ts "${@:-postgres}"
