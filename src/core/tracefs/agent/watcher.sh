# The file watcher (the fw_* functions, the WATCH and WRITERS verbs): never leave probes on a file that changed
# under them. The lease guards' programs, lease.pl and lease.py, are inlined in place of their quoted marks below
# (FWLPL, FWLPY), inside the single quotes (so neither holds one).
# ---- The file watcher: never leave probes on a file that changed under them ----
# A uprobe sits at a file offset of an inode, and the kernel copies the probed instruction once. A file written
# over in place (same inode: cp new old) keeps its probes at the old offsets, now inside other instructions: the
# new program crashes there, and hits would be attributed to the wrong code. While armed, a background loop
# stats every probed file each FWI seconds (one stat for all of them; inotify needs tools a target may lack) and
# compares inode, size, mtime and ctime with the baseline taken when the file was first defined; on a
# difference with the same inode it reads the build-id (when BUILDID named one): unchanged, it was only touched.
# Otherwise: same inode, "changed": the file's events are disabled at once; a new inode, "replaced" (a new build
# renamed over it, which is not probed; the old build's processes still are); no file, "removed". Each verdict is
# said twice: as a NOTE on stderr and as a marker in the trace stream, where it falls between the hits in time
# order. Every pass writes "tick K" before its stat and "ok K D" after it (D: files found changed so far), so the
# client shows a hit only once a later check proved its file unchanged, and drops a changed file's hits after its
# last good check. Markers end with the client's key (WATCH), which a traced program cannot know.
FWK=
FWPID=
FWBASE=
FWBID=
# A hit is shown once a check that began after it has passed: the interval bounds that wait (about 0.025 s, then
# the check's own time), at a stat and a sleep per check on the target (measured here under load: 2.7 ms of CPU a
# check, 26 checks a second, 7% of a CPU, against 4% at 0.05 s).
FWI=0.025
FWGEN=0
FWM=0
FWNOMARK=0

# Markers are ring-buffer entries, so a full buffer loses them as it loses hits, and the per-CPU loss counters count
# them: each says which watcher wrote it and how many it had written ("GEN.COUNT"), and each watcher says its total
# when it ends (NOTE WATCH marks GEN COUNT), so the client can take the markers out of the loss figures.
fw_mark() {
  [ "$FWNOMARK" = 1 ] && return 0
  FWM=$((FWM + 1))
  printf '%s\n' "probelens_watch $FWGEN.$FWM $1 $FWK" 2>/dev/null > "$I/trace_marker"
}

fw_stat() { [ $# -gt 0 ] && stat -L -c '%n %i %s %y %z' "$@" 2>/dev/null; }

# ---- The lease guard: a write waits until the file's probes are disabled ----
# The watcher's checks leave a window between two of them, which a starved agent on a loaded host widens. Where the
# target has perl or python3, a guard process holds a read lease (fcntl F_SETLEASE F_RDLCK) on each probed file: the
# kernel then makes an open for writing or a truncate of it wait (at most /proc/sys/fs/lease-break-time) until the
# holder lets go, and tells the holder (SIGIO). The guard disables our events on the file first, lets go and ends,
# so no byte is written while a probe is armed on it. A rename over the file (a new inode) is not a write: the
# watcher reports it as before. FWL holds "path pid" lines of the guards; a file with no guard is only polled. Each
# file's guard is said once (NOTE WATCH guard lease|poll PATH [TOOL]).
FWL=
# shellcheck disable=SC2016 # a literal $ (a pattern or a program text), not an expansion
FWLPL='@lease.pl@'
# shellcheck disable=SC2016 # a literal $ (a pattern or a program text), not an expansion
FWLPY='@lease.py@'

fw_lease_pid() {
  while IFS=' ' read -r lp lpid; do [ "$lp" = "$1" ] && { printf '%s\n' "$lpid"; return 0; }; done <<FWL_END
$FWL
FWL_END
  return 1
}

# Starts the guard of file $1 (once): perl, else python3, else the file is polled only.
fw_guard() {
  case "
$FWL" in *"
$1 "*) return 0 ;; esac
  for tool in perl python3; do
    command -v "$tool" > /dev/null 2>&1 || continue
    case "$tool" in
      perl) got=$(perl -e "$FWLPL" "$1" "$T/uprobe_events" "$I/events/$G" "$G" "$$" < /dev/null 2> /dev/null) ;;
      *) got=$(python3 -c "$FWLPY" "$1" "$T/uprobe_events" "$I/events/$G" "$G" "$$" < /dev/null 2> /dev/null) ;;
    esac
    case "$got" in
      '' | *[!0-9]*) ;;
      *) FWL="$FWL$1 $got
"; say NOTE WATCH guard lease "$1" "$tool"; return 0 ;;
    esac
  done
  FWL="$FWL$1 -
"
  say NOTE WATCH guard poll "$1"
}

# Whether the guard of file $1 let go (a writer opened it): 0 yes; 1 no, or the file has no guard.
fw_lease_broken() {
  lpid=$(fw_lease_pid "$1") || return 1
  [ "$lpid" != - ] || return 1
  ! kill -0 "$lpid" 2>/dev/null
}

fw_unguard() {
  while IFS=' ' read -r lp lpid; do
    case "$lpid" in '' | -) ;; *) kill -TERM "$lpid" 2>/dev/null ;; esac
  done <<FWU_END
$FWL
FWU_END
  FWL=
}

# FWOURS := our group's definition lines. A read of uprobe_events that another tracer's removal cuts short skips
# lines (the kernel's reader resumes by position: seen here as a disarm that found none of its events), so the file
# is read again until it holds every event of our group (the instance's events/GROUP directories, which only this
# agent adds or removes), at most 50 times.
fw_ours() {
  fo_want=
  for fo_d in "$I/events/$G"/*; do [ -d "$fo_d" ] && fo_want="$fo_want ${fo_d##*/}"; done
  fo_try=0
  while [ $fo_try -lt 50 ]; do
    fo_try=$((fo_try + 1))
    FWOURS=$(grep "^[pr]:$G/" "$T/uprobe_events" 2>/dev/null)
    fo_all=1
    for fo_e in $fo_want; do
      case "$FWOURS" in *":$G/$fo_e "*) ;; *) fo_all=0; break ;; esac
    done
    [ $fo_all = 1 ] && return 0
  done
  return 0
}

# FWP := the files our group's definitions probe (each once, in definition order).
fw_paths() {
  FWP=
  fw_ours
  while IFS=': ' read -r _ ge path rest; do
    case "$ge" in "$G"/*) ;; *) continue ;; esac
    case " $FWP " in *" $path "*) ;; *) FWP="$FWP $path" ;; esac
  done <<FWOP_END
$FWOURS
FWOP_END
}

# Adds a baseline line for every probed file that has none yet; returns 1 when there was none to add.
fw_baseline() {
  fw_paths
  new=
  for path in $FWP; do
    case "
$FWBASE" in *"
$path "*) ;; *) new="$new $path" ;; esac
  done
  [ -n "$new" ] || return 1
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  add=$(fw_stat $new)
  set +f
  [ -n "$add" ] && FWBASE="$FWBASE$add
"
  return 0
}

# Whether $1's build-id bytes (as BUILDID checked them) are still there: 0 yes, 1 no or unknown.
fw_same_build() {
  while IFS=' ' read -r bp boff blen bhex; do
    [ "$bp" = "$1" ] || continue
    got=
    for w in $(dd if="$1" bs=1 skip="$boff" count="$blen" 2>/dev/null | od -An -v -tx1); do got="$got$w"; done
    [ "$got" = "$bhex" ]; return
  done <<FWB_END
$FWBID
FWB_END
  return 1
}

# Disables every event of ours that probes file $1 in our instance; FWN := how many.
fw_disable() {
  FWN=0
  seen=' '
  fw_ours
  while IFS=': ' read -r _ ge path rest; do
    case "$ge" in "$G"/*) ;; *) continue ;; esac
    [ "$path" = "$1" ] || continue
    # An event may have several probe points (several definition lines): once each.
    case "$seen" in *" $ge "*) continue ;; esac
    seen="$seen$ge "
    if [ -f "$I/events/$ge/enable" ]; then echo 0 2>/dev/null > "$I/events/$ge/enable"; FWN=$((FWN + 1)); fi
  done <<FWOD_END
$FWOURS
FWOD_END
}

# One check of every watched file ($base, lines "path sig…") against $now (fw_stat's lines); a file that changed
# is reported and dropped from $base, a touched one gets its new line.
fw_examine() {
  nb=
  while IFS= read -r bl; do
    [ -n "$bl" ] || continue
    set -f
    # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
    set -- $bl
    set +f
    p=$1 bino=$2
    cur=
    while IFS= read -r nl; do case "$nl" in "$p "*) cur=$nl ;; esac; done <<FWN_END
$now
FWN_END
    if [ "$cur" = "$bl" ]; then nb="$nb$bl
"; continue; fi
    set -f
    # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
    set -- $cur
    set +f
    if [ -z "$cur" ]; then
      fw_mark "removed $k $p"; say NOTE WATCH removed "$p"
    elif [ "$2" != "$bino" ]; then
      fw_mark "replaced $k $p"; say NOTE WATCH replaced "$p"
    elif fw_same_build "$p" && ! fw_lease_broken "$p"; then
      nb="$nb$cur
"
    else
      dead=$((dead + 1))
      fw_mark "changed $k $p"; say NOTE WATCH changed "$p"
      fw_disable "$p"
      fw_mark "disabled $k $p $FWN"; say NOTE WATCH disabled "$p" "$FWN"
    fi
  done <<FWE_END
$base
FWE_END
  base=$nb
}

# One check of check number $k, between its two markers: the files' stat lines against $base, examined when
# they differ.
fw_check() {
  fw_mark "tick $k"
  paths=
  while IFS=' ' read -r p rest; do [ -n "$p" ] && paths="$paths $p"; done <<FWC_END
$base
FWC_END
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  now=$(fw_stat $paths)
  set +f
  broken=
  for p in $paths; do fw_lease_broken "$p" && broken=1; done
  [ -n "$paths" ] && { [ "$now
" != "$base" ] || [ -n "$broken" ]; } && fw_examine
  fw_mark "ok $k $dead"
}

# The loop (a subshell): ends when the agent or the instance is gone.
fw_loop() {
  FWM=0
  trap 'say NOTE WATCH marks "$FWGEN" "$FWM"; exit 0' TERM
  base=$FWBASE
  k=0 dead=0
  while kill -0 "$1" 2>/dev/null && [ -d "$I" ]; do
    k=$((k + 1))
    fw_check
    sleep "$FWI" 2>/dev/null || sleep 1
  done
}

# Ends the watcher with TERM, so it says how many markers it wrote; KILL after about a second (a TERM that lands
# right after its fork, before it has its own trap, can be lost: see watch). It ends within its check interval, so
# it is looked at every 0.01 s (STOP waits for this).
fw_stop() {
  [ -n "$FWPID" ] || return 0
  kill -TERM "$FWPID" 2>/dev/null
  wait_ended "$FWPID" 100
  kill -KILL "$FWPID" 2>/dev/null
  wait "$FWPID" 2>/dev/null
  FWPID=
}

# (Re)starts the watcher when the session watches files and a probed file has no baseline yet (or none runs).
fw_sync() {
  [ -n "$FWK" ] && [ "$STATE" = armed ] && [ -f "$I/trace_marker" ] || return 0
  if fw_baseline || [ -z "$FWPID" ]; then
    for path in $FWP; do fw_guard "$path"; done
    fw_stop
    FWGEN=$((FWGEN + 1))
    fw_loop "$$" < /dev/null > /dev/null &
    FWPID=$!
  fi
}

# Run on every heartbeat: a watcher that died (killed, out of memory) is started again, or the client, which shows a
# hit only after a check, would show nothing more.
fw_alive() {
  [ -n "$FWPID" ] || return 0
  fst=
  { read -r fst < "/proc/$FWPID/stat"; } 2>/dev/null
  case "$fst" in '' | *") Z "* | *") X "*) wait "$FWPID" 2>/dev/null; FWPID=; fw_sync ;; esac
}

# One last check, run by STOP after the cut (nothing is recorded any more): it covers every record. The buffer
# takes no markers then, so its verdicts go to stderr only (NOTE WATCH), and it writes none.
fw_final() {
  [ -n "$FWK" ] && [ -n "$FWBASE" ] || return 0
  fw_stop
  FWGEN=$((FWGEN + 1)) FWM=0 FWNOMARK=1
  base=$FWBASE k=final dead=0
  fw_check
  say NOTE WATCH marks "$FWGEN" "$FWM"
}

# WATCH <key>: mark the stream with this key and watch the probed files once armed.
fw_watch() {
  matches '^[a-z0-9]{8,32}$' "$1" || { say ERR WATCH EINVAL "bad key"; return; }
  [ -f "$I/trace_marker" ] || { say ERR WATCH ENOTSUP "this kernel's tracefs instances have no trace_marker"; return; }
  FWK=$1
  fw_sync
  say OK WATCH
}

# Whether enabling event $1 is safe: its file must not have been written over since its baseline.
fw_ev_ok() {
  [ -n "$FWK" ] || return 0
  fw_ours
  while IFS=': ' read -r _ ge path rest; do
    [ "$ge" = "$G/$1" ] || continue
    bl=
    while IFS= read -r l; do case "$l" in "$path "*) bl=$l ;; esac; done <<FWO_END
$FWBASE
FWO_END
    [ -n "$bl" ] || return 0
    fw_lease_broken "$path" && return 1
    cur=$(fw_stat "$path")
    [ -n "$cur" ] && [ "$cur" != "$bl" ] || return 0
    set -f
    # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
    { set -- $bl; bino=$2; set -- $cur; }
    set +f
    [ "$2" != "$bino" ] && return 0
    fw_same_build "$path"
    return
  done <<FWOK_END
$FWOURS
FWOK_END
  return 0
}

# WRITERS <path>: the processes that have the file open for writing (INFO "<pid> <comm>" each), then OK.
# /proc/PID/fd/N links are stat'ed in one go; fdinfo's octal flags end in the access mode (1 or 2: writing).
fw_writers() {
  matches '^/[A-Za-z0-9._/+@,=~-]+$' "$1" || { say ERR WRITERS EINVAL "not a path"; return; }
  id=$(stat -L -c '%d %i' "$1" 2>/dev/null) || { say ERR WRITERS ENOENT "no file $1 on the target"; return; }
  for fd in $(stat -L -c '%d %i %n' /proc/[0-9]*/fd/* 2>/dev/null | sed -n "s,^$id \(/proc/[0-9]*/fd/[0-9]*\)$,\1,p"); do
    pid=$(printf '%s\n' "$fd" | sed 's,^/proc/\([0-9]*\)/.*,\1,')
    info=$(printf '%s\n' "$fd" | sed 's,/fd/,/fdinfo/,')
    fl=$(sed -n 's/^flags:[[:space:]]*\([0-7]*\)$/\1/p' "$info" 2>/dev/null)
    case "$fl" in *[1256])
      comm=$(head -n 1 "/proc/$pid/comm" 2>/dev/null | tr -c 'A-Za-z0-9._+:@=,\n-' '?')
      say INFO WRITERS "$pid" "$comm" ;;
    esac
  done
  say OK WRITERS
}
