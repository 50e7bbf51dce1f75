# The processes that run a build, in any mount and PID namespace: the PROCS and PIDFILE verbs.
# ---- Processes that run a build: PROCS and PIDFILE ----
# A process runs the build when its executable, or a file it maps, holds the build's GNU build-id at the note's
# offset. Both are read through /proc (the executable's magic link, map_files), so a process in a container, whose
# files the host may reach by no path of its own, is found as one on the host is. Its PID in its own namespace is the
# last of status's NSpid.

# BA := the bytes of file $1 at offset $2, length $3, as lowercase hex.
bytes_at() {
  BA=
  for w in $(dd if="$1" bs=1 skip="$2" count="$3" 2>/dev/null | od -An -v -tx1); do BA="$BA$w"; done
}

# PM := a path the host can arm for file $2 (its name in process $1's view) reached by the magic link $3: the name
# itself where it is the same file here, else through the process's root (/proc/PID/root/NAME), else the link (good
# while the process lives). Only a name of the characters a uprobe definition allows.
proc_path() {
  PM=
  if [ -n "$2" ] && matches '^/[A-Za-z0-9._/+@,=~-]+$' "$2"; then
    # shellcheck disable=SC3013 # -ef: dash, busybox ash and bash all have it
    if [ "$2" -ef "$3" ]; then PM=$2; return; fi
    # shellcheck disable=SC3013 # -ef: dash, busybox ash and bash all have it
    if [ "/proc/$1/root$2" -ef "$3" ]; then PM="/proc/$1/root$2"; return; fi
  fi
  PM=$3
}

# PM := where process $1's copy of the build is (see proc_path): its executable, else a file it maps whose name ends
# in /$5 ("-": the executable only), holding bytes $4 at offset $2, length $3. Status 1: none.
proc_match() {
  PM=
  bytes_at "/proc/$1/exe" "$2" "$3"
  if [ -n "$BA" ] && [ "$BA" = "$4" ]; then
    proc_path "$1" "$(readlink "/proc/$1/exe" 2>/dev/null)" "/proc/$1/exe"
    return 0
  fi
  [ "$5" = - ] && return 1
  pm_maps=$(sed -n 's|^\([0-9a-f]*-[0-9a-f]*\) [^/]*\(/.*/'"$5"'\)$|\1 \2|p' "/proc/$1/maps" 2>/dev/null)
  [ -n "$pm_maps" ] || return 1
  while read -r pm_range pm_name; do
    [ -n "$pm_range" ] || continue
    bytes_at "/proc/$1/map_files/$pm_range" "$2" "$3"
    if [ -n "$BA" ] && [ "$BA" = "$4" ]; then
      proc_path "$1" "$pm_name" "/proc/$1/map_files/$pm_range"
      return 0
    fi
  done <<PROC_MAPS
$pm_maps
PROC_MAPS
  return 1
}

# NS := process $1's PID in its own PID namespace (itself where the kernel has no NSpid).
ns_pid() {
  NS=$(sed -n 's/^NSpid:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $1 $NS
  set +f
  while [ $# -gt 1 ]; do shift; done
  NS=$1
}

# Checks PROCS/PIDFILE operands "$1 OFFSET LENGTH HEX NAME" for verb $2; PV_* := them.
procs_args() {
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $1
  set +f
  [ $# -eq 4 ] && matches '^[0-9]{1,12}$' "$1" && matches '^[0-9]{1,2}$' "$2" && matches '^[0-9a-f]{2,128}$' "$3" \
    && matches '^(-|[A-Za-z0-9._+@,=~-]{1,255})$' "$4" || return 1
  PV_OFF=$1 PV_LEN=$2 PV_HEX=$3 PV_NAME=$4
}

# PROCS <offset> <length> <hex> <name|->: every process running the build: INFO "proc PID NSPID PATH" each.
procs() {
  procs_args "$1" || { say ERR PROCS EPROTO "usage: PROCS <offset> <length> <hex> <file name|->"; return; }
  for d in /proc/[0-9]*; do
    p=$(printf '%s\n' "$d" | sed 's,^/proc/,,')
    [ "$p" = "$$" ] && continue
    proc_match "$p" "$PV_OFF" "$PV_LEN" "$PV_HEX" "$PV_NAME" || continue
    ns_pid "$p"
    say INFO PROCS proc "$p" "$NS" "$PM"
  done
  say OK PROCS
}

# PIDFILE <pid> <offset> <length> <hex> <name|->: the process a --pid names, by its PID on the host or, where no host
# process of that PID runs the build, in its own namespace: "pid=HOSTPID nspid=NSPID path=PATH" (PATH: where the host
# arms its copy of the build).
pid_file() {
  pf=$(printf '%s\n' "$1" | sed 's/ .*//')
  pf_rest=$(printf '%s\n' "$1" | sed 's/^[^ ]* *//')
  # shellcheck disable=SC2015 # a failure of any check takes the error branch
  matches '^[0-9]{1,10}$' "$pf" && procs_args "$pf_rest" \
    || { say ERR PIDFILE EPROTO "usage: PIDFILE <pid> <offset> <length> <hex> <file name|->"; return; }
  if [ -d "/proc/$pf" ] && proc_match "$pf" "$PV_OFF" "$PV_LEN" "$PV_HEX" "$PV_NAME"; then
    ns_pid "$pf"
    say OK PIDFILE "pid=$pf" "nspid=$NS" "path=$PM"
    return
  fi
  pf_found='' pf_n=0 pf_path=''
  for d in /proc/[0-9]*; do
    p=$(printf '%s\n' "$d" | sed 's,^/proc/,,')
    [ "$p" = "$pf" ] && continue
    ns_pid "$p"
    [ "$NS" = "$pf" ] || continue
    proc_match "$p" "$PV_OFF" "$PV_LEN" "$PV_HEX" "$PV_NAME" || continue
    pf_found="$pf_found $p" pf_n=$((pf_n + 1)) pf_path=$PM pf_one=$p
  done
  if [ $pf_n = 1 ]; then say OK PIDFILE "pid=$pf_one" "nspid=$pf" "path=$pf_path"; return; fi
  if [ $pf_n -gt 1 ]; then say ERR PIDFILE EAMBIGUOUS "$pf$pf_found"; return; fi
  if [ -d "/proc/$pf" ]; then say ERR PIDFILE ENOTBUILD "$pf"; else say ERR PIDFILE ESRCH "$pf"; fi
}
