#!/usr/bin/env bash
# Runs .ci/run as CI does (CI=true, no stdin) on a fresh Debian 12 userland: a debootstrap chroot that has only
# what a new machine of this project's kind has before .ci/run (Node.js 20 with npm, git, python3, make, g++),
# so a package that this machine has by hand but .ci/run does not install shows up as a red run here.
#
#   sudo scripts/ci-fresh-userland.sh [--runs N] [--hogs N] [--keep-cache] [--root DIR]
#
# --runs N       run .ci/run N times in a row in the same chroot (default 1); stops at the first red run
# --hogs N       keep N busy-loop processes running during the runs (default 2), as on a shared, loaded machine
# --keep-cache   bind this machine's test cache (~/.cache/probelens-test: fixtures, corpus builds, code-server)
#                into the chroot, so the corpus tier does not rebuild the real programs (cold: an hour on 2 cores)
# --root DIR     where the chroot lives (default /var/tmp/probelens-fresh-userland; made on first use)
#
# Needs root, debootstrap, and this machine's Node.js (copied into the chroot: Debian 12's own nodejs is 18).
# Each run's output is in DIR/root/ci-run-K.log; the script prints each run's closing lines and exits non-zero
# on the first red run.
set -euo pipefail

runs=1 hogs=2 keep_cache= root=/var/tmp/probelens-fresh-userland
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --hogs) hogs=$2; shift 2 ;;
    --keep-cache) keep_cache=1; shift ;;
    --root) root=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--hogs N] [--keep-cache] [--root DIR]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "$0: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "$0: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -x "$root/usr/bin/apt-get" ]; then
  mkdir -p "$root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
fi
# The Debian sources of this machine (security updates included), and its Node.js, as a new machine has them.
cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" 2>/dev/null && rm -f "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The machine's name and hosts table, as a machine has them (sudo warns on stderr when it cannot resolve its host).
cp /etc/hostname "$root/etc/hostname" 2>/dev/null || true
cp /etc/hosts "$root/etc/hosts"

mounts=()
bind() {
  mkdir -p "$root$2"
  mount --rbind "$1" "$root$2"
  mount --make-rslave "$root$2"
  mounts+=("$root$2")
}
hog_pids=()
cleanup() {
  for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R "${mounts[i]}" 2>/dev/null || umount -lR "${mounts[i]}" || true; done
}
trap cleanup EXIT
# The chroot's / must be a mount point, as a machine's root is: the tests' `unshare --mount` makes the new
# namespace's mounts private from / down, which the kernel refuses (EINVAL) on a directory that is not one.
bind "$root" /
bind /proc /proc
bind /sys /sys
bind /dev /dev
bind /run /run
[ -z "$keep_cache" ] || { mkdir -p /root/.cache/probelens-test; bind /root/.cache/probelens-test /root/.cache/probelens-test; }

# The certificate settings of this machine's environment pass through (an egress proxy may sign with its own CA).
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS} ${SSL_CERT_FILE:+SSL_CERT_FILE=$SSL_CERT_FILE} "$@"
}
if ! in_root sh -c 'command -v git && command -v g++ && command -v python3 && command -v make' >/dev/null 2>&1; then
  in_root apt-get update -qq
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    ca-certificates git python3 make g++ xz-utils >/dev/null
fi
# This machine's local CAs (those update-ca-certificates adds to the system bundle), as a new machine has them.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  in_root update-ca-certificates >/dev/null
fi
if ! in_root npm --version >/dev/null 2>&1; then
  # This machine's Node.js (NodeSource's Node 20) and the npm 11 a new machine upgrades to when it starts.
  mkdir -p "$root/usr/lib/node_modules" "$root/usr/include"
  cp -a /usr/bin/node "$root/usr/bin/node"
  rm -rf "$root/usr/lib/node_modules/npm"
  cp -a /usr/lib/node_modules/npm "$root/usr/lib/node_modules/npm"
  [ -d /usr/include/node ] && cp -a /usr/include/node "$root/usr/include/"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
  cp /etc/npmrc "$root/etc/npmrc" 2>/dev/null || true
  [ -f /root/.npmrc ] && cp /root/.npmrc "$root/root/.npmrc"
fi
echo "chroot: $(in_root sh -c 'echo node $(node --version), npm $(npm --version), $(. /etc/os-release; echo "$PRETTY_NAME")')"

for ((h = 0; h < hogs; h++)); do
  sh -c 'while :; do :; done' &
  hog_pids+=($!)
done
rm -rf "$root/root/probelens"
git clone -q "$repo" "$root/root/probelens"
for ((k = 1; k <= runs; k++)); do
  log=$root/root/ci-run-$k.log
  start=$SECONDS
  if in_root sh -c 'cd /root/probelens && CI=true bash .ci/run </dev/null' >"$log" 2>&1; then rc=0; else rc=$?; fi
  echo "run $k of $runs: exit $rc in $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg), $hogs hogs)"
  grep -E '^::: stage .* took|^# (tests|pass|fail|skipped)|^not ok' "$log" | sed 's/^/  /'
  [ "$rc" = 0 ] || { echo "run $k failed: $log" >&2; exit "$rc"; }
done
