# Probe groups and their owners: who owns a group (alive_owner, ns_id, scan_procs, judge), removing a group, its
# instance and its readers (kill_readers, rmdir_retry, remove_group, remove_leftover), the start-of-session sweep of
# dead owners' groups, and FORCE.
alive_owner() {
  kill -0 "$1" 2>/dev/null || return 1
  grep -q probelens-agent "/proc/$1/cmdline" 2>/dev/null
}

# A group's owner is the agent that created it, named by its pid in its own PID namespace and by that namespace:
# probelens_<pid>_<nsdev>_<nsino>_<nonce>, where nsdev and nsino (hex) are the device and inode of
# /proc/<pid>/ns/pid, which together identify a namespace. A pid means nothing outside its namespace, so an
# owner is judged from what this agent's /proc shows (see judge).
ns_id() {
  set -f
  # shellcheck disable=SC2046 # split into words on purpose, globbing off
  set -- $(stat -L -c '%d %i' "$1" 2>/dev/null)
  set +f
  [ $# -eq 2 ] && printf '%x_%x\n' "$1" "$2"
}

# NSMAP: "<pid> <nsdev>_<nsino>" for every visible process whose namespace we may read; NSPIDS: their
# NSpid lines (the pid in each namespace from /proc's own down to the process's, innermost last; kernels
# before 4.1 have none); ALLVIS=1 when the initial PID namespace is among them, which means /proc shows every
# process on the machine. The initial namespace's inode is fixed (0xEFFFFFFC, the kernel's PROC_PID_INIT_INO);
# namespaces created later get inodes from 0xF0000000 up.
scan_procs() {
  NSMAP=
  raw=$(stat -L -c '%n %d %i' /proc/[0-9]*/ns/pid 2>/dev/null | sed -n 's,^/proc/\([0-9]*\)/ns/pid \([0-9]* [0-9]*\)$,\1 \2,p')
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  [ -n "$raw" ] && NSMAP=$(set -f; printf '%s %x_%x\n' $raw)
  NSPIDS=$(grep -H '^NSpid:' /proc/[0-9]*/status 2>/dev/null)
  ALLVIS=0
  printf '%s\n' "$NSMAP" | grep -q ' [0-9a-f]*_effffffc$' && ALLVIS=1
}

# Whether group $1's owner is alive: 0 alive (or may be), 1 provably dead, 2 cannot tell from here; JWHY says
# why. Needs scan_procs, run after the group was listed (an owner alive then is in the scan). A group of the
# older form probelens_<pid>_<nonce> names no namespace: its owner may be any agent with that pid.
judge() {
  pid=$(printf '%s\n' "$1" | sed -n 's/^probelens_\([0-9][0-9]*\)_[a-z0-9_]*$/\1/p')
  ns=$(printf '%s\n' "$1" | sed -n 's/^probelens_[0-9][0-9]*_\([0-9a-f][0-9a-f]*_[0-9a-f][0-9a-f]*\)_[a-z0-9][a-z0-9]*$/\1/p')
  [ -n "$pid" ] || { JWHY="not a group name ProbeLens gives"; return 2; }
  if [ -z "$NSPIDS" ]; then
    # Without NSpid a pid can only be checked in our own namespace.
    if [ "$ns" = "$SELFNS" ] && [ "$SELFNS" != 0_0 ]; then
      alive_owner "$pid" && { JWHY="owner pid $pid is running"; return 0; }
      JWHY="owner pid $pid is gone"; return 1
    fi
    JWHY="this kernel shows no NSpid to find pid $pid of namespace $ns"; return 2
  fi
  for c in $(printf '%s\n' "$NSPIDS" | sed -n "s,^/proc/\([0-9]*\)/status:NSpid:.*[^0-9]$pid\$,\1,p"); do
    grep -q probelens-agent "/proc/$c/cmdline" 2>/dev/null || continue
    cns=$(printf '%s\n' "$NSMAP" | sed -n "s/^$c //p")
    if [ -z "$ns" ] || [ -z "$cns" ] || [ "$cns" = "$ns" ]; then JWHY="owner pid $pid is running"; return 0; fi
  done
  if [ "$ALLVIS" = 1 ]; then JWHY="no agent runs as pid $pid in its namespace"; return 1; fi
  # One visible process of a namespace means all of its processes are visible (an ancestor's /proc shows them).
  if [ -n "$ns" ] && printf '%s\n' "$NSMAP" | grep -q " $ns\$"; then JWHY="no agent runs as pid $pid in its namespace"; return 1; fi
  JWHY="its PID namespace ($ns) is not visible from this agent's /proc"
  [ -n "$ns" ] || JWHY="it names no PID namespace and this agent's /proc does not show every process"
  return 2
}

kill_readers() {
  # kill takes pids of our namespace; /proc's are another's when it was mounted by an ancestor namespace.
  [ "$PROCOURS" = 1 ] || return 0
  # shellcheck disable=SC2013 # one word per line: names of [A-Za-z0-9_] only
  for p in $(grep -lF "instances/$1/trace_pipe" /proc/[0-9]*/cmdline 2>/dev/null | sed -n 's,^/proc/\([0-9]*\)/cmdline$,\1,p'); do
    [ "$p" = "$$" ] || kill "$p" 2>/dev/null
  done
}

rmdir_retry() {
  k=0
  while [ -d "$1" ] && [ $k -lt 50 ]; do
    rmdir "$1" 2>/dev/null && return 0
    k=$((k + 1)); sleep 0.1 2>/dev/null || sleep 1
  done
  [ ! -d "$1" ]
}

# Remove every definition of group $1. A still-enabled event refuses removal (EBUSY): disable it in every
# instance and at the top level, then retry once.
remove_group() {
  rg_try=0
  while :; do
    remove_group_in "$1" uprobe_events
    [ -f "$T/kprobe_events" ] && remove_group_in "$1" kprobe_events
    # A listing that another tracer's removal cut short skips lines (the kernel resumes by position): the group's
    # events directory, there while any event of it is, says whether one was missed.
    [ -d "$T/events/$1" ] || return 0
    rg_try=$((rg_try + 1))
    [ $rg_try -lt 5 ] || return 0
  done
}

remove_group_in() {
  # One write removes the whole group (an empty event name matches all of it): ~30x faster than one per event.
  printf '%s\n' "-:$1/" 2>/dev/null >> "$T/$2"
  # kprobe_events lists a return probe with its maxactive (r10:G/E).
  # shellcheck disable=SC2013 # one word per line: names of [A-Za-z0-9_] only
  for ev in $(sed -n "s/^[pr][0-9]*:$1\/\([A-Za-z0-9_]*\) .*/\1/p" "$T/$2"); do
    # An event of several probe points is listed once per point: the first removal took them all.
    grep -q "^[pr][0-9]*:$1/$ev " "$T/$2" || continue
    if ! printf '%s\n' "-:$1/$ev" 2>/dev/null >> "$T/$2"; then
      for f in "$T"/instances/*/events/"$1"/"$ev"/enable "$T/events/$1/$ev/enable"; do
        [ -f "$f" ] && echo 0 2>/dev/null > "$f"
      done
      printf '%s\n' "-:$1/$ev" 2>/dev/null >> "$T/$2" || say INFO CLEANUP cannot remove "$1/$ev"
    fi
  done
}

remove_leftover() {
  [ -f "$T/instances/$1/events/$1/enable" ] && echo 0 2>/dev/null > "$T/instances/$1/events/$1/enable"
  [ -f "$T/events/$1/enable" ] && echo 0 2>/dev/null > "$T/events/$1/enable"
  unhist_leftover "$1"
  remove_group "$1"
  kill_readers "$1"
  [ -d "$T/instances/$1" ] && rmdir_retry "$T/instances/$1"
}

# Removes the groups and instances of owners proven dead; names those it cannot judge (never removes them).
sweep() {
  groups=$( { sed -n 's/^[pr]:\(probelens_[0-9][a-z0-9_]*\)\/.*/\1/p' "$T/uprobe_events"
    [ -f "$T/kprobe_events" ] && sed -n 's/^[pr][0-9]*:\(probelens_[0-9][a-z0-9_]*\)\/.*/\1/p' "$T/kprobe_events"
    [ -f "$T/synthetic_events" ] && sed -n 's/^\(probelens_[0-9][a-z0-9_]*\)_l[0-9]*[[:space:]].*/\1/p' "$T/synthetic_events"
    for d in "$T"/instances/probelens_* "$T"/events/probelens_*; do [ -d "$d" ] && printf '%s\n' "$d" | sed 's,.*/,,'; done; } 2>/dev/null)
  [ -n "$groups" ] || return 0
  scan_procs
  done_list=' '
  for g in $groups; do
    case "$done_list" in *" $g "*) continue ;; esac
    done_list="$done_list$g "
    matches '^probelens_[0-9]+_[a-z0-9_]+$' "$g" || continue
    judge "$g"
    case $? in
      1) remove_leftover "$g"; say INFO HELLO swept "$g" ;;
      2) say INFO HELLO undecided "$g" "$JWHY" ;;
    esac
  done
}

# Removes a group whose owner cannot be judged here, when the user says it is dead. A live owner is refused.
force() {
  matches '^probelens_[0-9]+_[a-z0-9_]{1,52}$' "$1" || { say ERR FORCE EINVAL "not a ProbeLens group name"; return; }
  [ "$1" != "$G" ] || { say ERR FORCE EINVAL "that is this session's own group"; return; }
  if [ ! -d "$T/events/$1" ] && [ ! -d "$T/instances/$1" ]; then say ERR FORCE ENOENT "no group or instance $1 on the target"; return; fi
  scan_procs
  judge "$1" && { say ERR FORCE EBUSY "its owner is alive ($JWHY)"; return; }
  remove_leftover "$1"
  if [ -d "$T/events/$1" ] || [ -d "$T/instances/$1" ]; then say ERR FORCE EKERNEL "could not remove all of $1"; else say OK FORCE; fi
}
