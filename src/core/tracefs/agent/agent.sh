# The target-side agent: one fixed POSIX sh program, run as `sh -c "$(cat agent.sh)" probelens-agent` under dash,
# busybox ash or bash (src/core/tracefs/agentScript.ts composes it: each `#include NAME` line below is replaced by
# that file's text). Nothing the client sends is ever evaluated: every value arrives as one stdin line, is checked
# against a strict pattern, and reaches tracefs only as the argument of `printf '%s\n'`.
#
# stdout carries the instance's trace_pipe and nothing else (a `cat` writes it directly), or after RAW its
# ring-buffer pages (raw.sh); control replies go to stderr, each prefixed with the client's per-session nonce so
# stray tool messages can't pass for replies. The verbs and their replies are listed once, in agentVerbs.ts.
set -u
umask 077
# The script's variables are its own. A name the caller's environment exports (a PROF or G of the user's shell)
# stays exported when the script assigns it, and a value of hundreds of KB (PROF holds a line per probe point) in
# the environment makes every later command fail to start (E2BIG): so every exported name is unset first but the
# search path, the home and the locale and time zone the tools format by.
for v in $(export -p | sed -n -e 's/^export \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' -e 's/^declare -x \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p'); do
  case "$v" in PATH | HOME | LANG | LANGUAGE | LC_* | TZ) ;; *) command unset -v "$v" 2>/dev/null ;; esac
done
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export PATH
N=-
T=
G=
I=
CAT=
GUARD=
WD=
HBS=0
# Seconds of silence the next wait allows instead of $HBS, after the client said it pauses (PAUSE); 0: none.
PAUSE_S=0
STATE=init
trap '' PIPE

say() { printf '%s %s\n' "$N" "$*" >&2; }

matches() { printf '%s\n' "$2" | grep -Eq -- "$1"; }

find_tracefs() {
  for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
    if [ -f "$d/README" ]; then T=$d; return 0; fi
  done
  m=$(sed -n 's/^[^ ]* \([^ ]*\) tracefs .*/\1/p' /proc/mounts 2>/dev/null | head -n 1)
  if [ -n "$m" ] && [ -f "$m/README" ]; then T=$m; return 0; fi
  if [ -d /sys/kernel/tracing ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
    if [ -f /sys/kernel/tracing/README ]; then T=/sys/kernel/tracing; return 0; fi
  fi
  return 1
}

caps() {
  c=
  grep -q 'ref_ctr_offset' "$T/README" 2>/dev/null && c="$c,ref_ctr"
  grep -q '%return' "$T/README" 2>/dev/null && c="$c,return_suffix"
  grep -q 'ustring' "$T/README" 2>/dev/null && c="$c,ustring"
  grep -qF '[u]<offset>' "$T/README" 2>/dev/null && c="$c,user_deref"
  grep -q 'hist:' "$T/README" 2>/dev/null && c="$c,hist"
  grep -qF '\imm-value' "$T/README" 2>/dev/null && c="$c,imm"
  for f in uprobe_events kprobe_events dynamic_events error_log uprobe_profile set_event_pid instances; do
    [ -e "$T/$f" ] && c="$c,$f"
  done
  printf '%s\n' "$c" | sed 's/^,//'
}

#include groups.sh

# Every child that ends is waited for here, so no SIGCHLD arrives while a later reply is written (see watch).
stop_reader() {
  [ -n "$GUARD" ] && kill -KILL "$GUARD" 2>/dev/null && wait "$GUARD" 2>/dev/null
  GUARD=
  [ -n "$CAT" ] || return 0
  kill "$CAT" 2>/dev/null
  wait "$CAT" 2>/dev/null
  CAT=
}

# Whether child $1 has ended within $2 hundredths of a second, as /proc shows it (an ended child stays a zombie
# until waited for, and kill -0 finds a zombie). Where sleep takes whole seconds only, each sleep counts 100.
wait_ended() {
  we_k=0
  while [ $we_k -lt "$2" ]; do
    we_st=
    { read -r we_st < "/proc/$1/stat"; } 2>/dev/null
    case "$we_st" in '' | *") Z "* | *") X "*) return 0 ;; esac
    we_k=$((we_k + 1))
    sleep 0.01 2>/dev/null || { sleep 1; we_k=$((we_k + 99)); }
  done
  return 1
}

# Everything the kernel buffered has been consumed by the reader once every CPU's entries count is 0 (nothing is
# recorded any more). The pump is then told to end after its round (USR1): the pages its dd took are written when
# it ends, so waiting for it is exact; a pump that does not end within 3 s (a client that stopped reading) is
# ended. cat of trace_pipe (or a pump whose /proc entry this agent cannot see) gets a short grace to write its last
# chunk. A slow client (a flood, a busy machine) drains slowly: the wait lasts as long as the reader makes
# progress, and ends after 3 s without any. What is left unread then is reported in the entries counts, which the
# client counts as lost.
drain_reader() {
  [ -n "$CAT" ] || return 0
  k=0
  last=-1
  while [ $k -lt 60 ]; do
    unread
    [ "$UNREAD" = 0 ] && break
    if [ "$UNREAD" = "$last" ]; then k=$((k + 1)); else k=0; last=$UNREAD; fi
    sleep 0.05 2>/dev/null || sleep 1
  done
  if [ "$RAW" = 1 ] && [ "$UNREAD" = 0 ] && [ "$PROCOURS" = 1 ] && kill -USR1 "$CAT" 2>/dev/null; then
    wait_ended "$CAT" 300
  else
    sleep 0.1 2>/dev/null || sleep 1
  fi
  stop_reader
}

#include profile.sh

# Runs once. A signal whose trap comes while it runs (between two of its commands, before on_signals has ignored that
# signal: a host shutting down sends TERM to every process, and the sshd's end closes stdin at the same moment)
# finds it running and lets it go on (see quit), so the group never stays behind half removed or not at all.
cleanup() {
  case "$STATE" in done | cleaning) return 0 ;; esac
  STATE=cleaning
  on_signals ''
  unwatch
  fw_stop
  fw_unguard
  if [ -n "$G" ]; then
    [ -f "$I/events/$G/enable" ] && echo 0 2>/dev/null > "$I/events/$G/enable"
    # Nobody is left to read what remains in the buffer: end the reader at once.
    stop_reader
    unhist
    remove_group "$G"
    kill_readers "$G"
    [ -d "$I" ] && rmdir_retry "$I"
  fi
  STATE='done'
}

quit() {
  # A trap that interrupts the cleanup returns to it: the cleanup that runs ends the shell when it is done.
  [ "$STATE" = cleaning ] && return 0
  exec > /dev/null 2>&1
  cleanup
  exit "$1"
}

#include watchdog.sh

#include watcher.sh
#include hist.sh
#include raw.sh

#include procs.sh
hello() {
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $1
  set +f
  [ $# -ge 2 ] || { say ERR HELLO EPROTO "usage: HELLO <version> <nonce> [heartbeat-seconds]"; exit 2; }
  matches '^[a-z0-9]{6,32}$' "$2" || { say ERR HELLO EPROTO "bad nonce"; exit 2; }
  N=$2
  [ "$1" = 1 ] || { say ERR HELLO EVERSION "agent speaks protocol 1, client asked for $1"; exit 2; }
  uid=$(id -u 2>/dev/null || sed -n 's/^Uid:[^0-9]*\([0-9]*\).*/\1/p' /proc/self/status)
  if ! find_tracefs; then
    [ "$uid" = 0 ] || { say ERR HELLO EPERM "needs root or passwordless sudo (uid $uid cannot read /sys/kernel/tracing)"; exit 3; }
    say ERR HELLO ENOTRACEFS "no tracefs at /sys/kernel/tracing or /sys/kernel/debug/tracing and mounting it failed: enable CONFIG_TRACING or mount tracefs"; exit 3
  fi
  [ -e "$T/uprobe_events" ] || { say ERR HELLO ENOUPROBES "this kernel has no uprobe_events (CONFIG_UPROBE_EVENTS is off)"; exit 3; }
  if [ "$uid" != 0 ] || [ ! -w "$T/uprobe_events" ]; then
    say ERR HELLO EPERM "needs root or passwordless sudo (uid $uid cannot write $T/uprobe_events)"; exit 3
  fi
  [ -d "$T/instances" ] || { say ERR HELLO ENOINSTANCES "this kernel has no tracefs instances"; exit 3; }
  SELFNS=$(ns_id /proc/self/ns/pid)
  [ -n "$SELFNS" ] || SELFNS=0_0
  PROCOURS=0
  # One NSpid entry: /proc was mounted by our own namespace, so its pids are ours.
  [ "$(sed -n 's/^NSpid:[[:space:]]*\([0-9]*\)$/x/p' /proc/self/status 2>/dev/null)" = x ] && PROCOURS=1
  grep -q '^NSpid:' /proc/self/status 2>/dev/null || PROCOURS=1
  sweep
  G="probelens_$$_${SELFNS}_$N"
  matches '^[a-z0-9_]{1,63}$' "$G" || { say ERR HELLO EPROTO "group name $G is 64 characters or more, which tracefs refuses: use a shorter nonce"; G=; exit 2; }
  I="$T/instances/$G"
  mkdir "$I" 2>/dev/null || { say ERR HELLO EINSTANCE "cannot create $I"; G=; exit 3; }
  STATE=ready
  if [ $# -ge 3 ] && matches '^[0-9]{1,4}$' "$3"; then HBS=$3; fi
  say OK HELLO 1 "pid=$$" "group=$G" "tracefs=$T" "uid=$uid" "caps=$(caps)"
}

def_pattern() {
  re='^[pr]:'"$G"'/[A-Za-z_][A-Za-z0-9_]{0,62} /[A-Za-z0-9._/+@,=~-]+:0x[0-9a-fA-F]+(%return)?(\(0x[0-9a-fA-F]+\))?( [A-Za-z_][A-Za-z0-9_]{0,62}=[]\A-Za-z0-9_%@$+().:[/-]+)*$'
}

# A kernel probe: SYMBOL[+OFFS] (MODULE:SYMBOL for a module's), never an absolute address (KASLR); r (rN: N
# instances) takes no offset but +0. Written to kprobe_events; fetchargs as for uprobes plus $argN and user-memory
# reads (+u0(..), ustring).
kdef_pattern() {
  re='^(p|r[0-9]{0,4}):'"$G"'/[A-Za-z_][A-Za-z0-9_]{0,62} ([A-Za-z0-9_]{1,56}:)?[A-Za-z_][A-Za-z0-9_.]{0,127}(\+[0-9]{1,6})?( [A-Za-z_][A-Za-z0-9_]{0,62}=[]\A-Za-z0-9_%@$+().:[/-]+)*$'
}

# One definition per write(): a write carrying several lines stops at the first line the kernel rejects.
# $2: the file (uprobe_events by default).
def_write() {
  dfile=uprobe_events
  [ $# -ge 2 ] && dfile=$2
  if printf '%s\n' "$1" 2>/dev/null >> "$T/$dfile"; then
    say OK DEF
  else
    if [ -f "$T/error_log" ]; then
      a=; b=; c=
      while IFS= read -r l; do a=$b; b=$c; c=$l; done < "$T/error_log"
      say INFO DEF "$a"; say INFO DEF "$b"; say INFO DEF "$c"
    fi
    say ERR DEF EKERNEL "the kernel rejected the definition"
  fi
}

def() {
  def_pattern
  if matches "$re" "$1"; then def_write "$1"; return; fi
  kdef_pattern
  matches "$re" "$1" || { say ERR DEF EINVAL "definition refused by the agent's pattern"; return; }
  [ -f "$T/kprobe_events" ] || { say ERR DEF ENOKPROBES "this kernel has no kprobe_events (CONFIG_KPROBE_EVENTS is off)"; return; }
  def_write "$1" kprobe_events
}

# DEFS <n>, then n definition lines: one reply per definition, as n DEF commands would give. One grep checks
# them all (a process per line costs tens of milliseconds on a loaded host); it prints the refused lines.
defs() {
  case "$1" in ''|*[!0-9]*) say ERR DEF EPROTO "usage: DEFS <count>"; return ;; esac
  [ "$1" -le 10000 ] || { say ERR DEF EPROTO "at most 10000 definitions at once"; return; }
  batch=
  k=0
  while [ $k -lt "$1" ] && IFS= read -r line; do
    batch="$batch$line
"
    k=$((k + 1))
  done
  def_pattern
  ure=$re
  kdef_pattern
  bad=$(printf '%s' "$batch" | grep -Ev -e "$ure" -e "$re")
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    case "
$bad
" in
      *"
$line
"*) say ERR DEF EINVAL "definition refused by the agent's pattern" ;;
      *)
        # A uprobe names its binary by absolute path; a kernel probe never has a ' /'.
        case "$line" in
          *" /"*) def_write "$line" ;;
          *) if [ -f "$T/kprobe_events" ]; then def_write "$line" kprobe_events; else say ERR DEF ENOKPROBES "this kernel has no kprobe_events (CONFIG_KPROBE_EVENTS is off)"; fi ;;
        esac ;;
    esac
  done <<DEFS_END
$batch
DEFS_END
}

buildid() {
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $1
  set +f
  # shellcheck disable=SC2015 # a failure of any check takes the error branch
  [ $# -eq 4 ] && matches '^[0-9]{1,12}$' "$1" && matches '^[0-9]{1,2}$' "$2" && matches '^[0-9a-f]{2,128}$' "$3" \
    && matches '^/[A-Za-z0-9._/+@,=~-]+$' "$4" || { say ERR BUILDID EPROTO "usage: BUILDID <offset> <length> <hex> <path>"; return; }
  # shellcheck disable=SC2015 # a failure of any check takes the error branch
  [ -f "$4" ] && [ -r "$4" ] || { say ERR BUILDID ENOENT "no readable file $4 on the target"; return; }
  got=
  for w in $(dd if="$4" bs=1 skip="$1" count="$2" 2>/dev/null | od -An -v -tx1); do got="$got$w"; done
  if [ "$got" = "$3" ]; then
    FWBID="$FWBID$4 $1 $2 $3
"
    say OK BUILDID
  else say ERR BUILDID EMISMATCH "$got"; fi
}

pid_filter() {
  matches '^[0-9]{1,10}$' "$1" || { say ERR PID EINVAL "not a pid"; return; }
  [ -d "/proc/$1/task" ] || { say ERR PID ESRCH "no process $1 on the target"; return; }
  # set_event_pid matches thread ids: add every thread now, and event-fork follows threads created later.
  [ -f "$I/options/event-fork" ] && echo 1 2>/dev/null > "$I/options/event-fork"
  for t in /proc/"$1"/task/*; do
    printf '%s\n' "$t" | sed 's,.*/,,' 2>/dev/null >> "$I/set_event_pid"
  done
  say OK PID
}

filter() {
  ev=$(printf '%s\n' "$1" | sed 's/ .*//')
  ex=$(printf '%s\n' "$1" | sed 's/^[^ ]* *//')
  # shellcheck disable=SC2015 # a failure of any check takes the error branch
  matches '^[A-Za-z_][A-Za-z0-9_]{0,62}$' "$ev" && matches '^[A-Za-z0-9_ =!<>&|()~*".,+/:-]+$' "$ex" \
    || { say ERR FILTER EINVAL "filter refused by the agent's pattern"; return; }
  [ -f "$I/events/$G/$ev/filter" ] || { say ERR FILTER ENOENT "no event $ev"; return; }
  if printf '%s\n' "$ex" 2>/dev/null > "$I/events/$G/$ev/filter"; then say OK FILTER; else
    while IFS= read -r l; do say INFO FILTER "$l"; done < "$I/events/$G/$ev/filter"
    say ERR FILTER EKERNEL "the kernel rejected the filter"
  fi
}

buf() {
  # shellcheck disable=SC2015 # a failure of any check takes the error branch
  matches '^[0-9]{1,8}$' "$1" && [ "$1" -gt 0 ] || { say ERR BUF EINVAL "not a size in KiB"; return; }
  if printf '%s\n' "$1" 2>/dev/null > "$I/buffer_size_kb"; then say OK BUF; else say ERR BUF EKERNEL "cannot set buffer_size_kb"; fi
}

# Overwrite on (the kernel default) drops the oldest events and the stream says LOST; off drops the newest,
# which only the per-CPU dropped-events counter shows, but a slow reader then receives far more.
overwrite() {
  case "$1" in 0|1) ;; *) say ERR OVERWRITE EINVAL "0 or 1"; return ;; esac
  if printf '%s\n' "$1" 2>/dev/null > "$I/options/overwrite"; then say OK OVERWRITE; else say ERR OVERWRITE EKERNEL "cannot set options/overwrite"; fi
}

# ARM [hist]: with hist, the group's events are not enabled: their triggers alone count (nothing is recorded).
arm() {
  if [ -f "$I/options/record-tgid" ]; then echo 1 2>/dev/null > "$I/options/record-tgid"; else say INFO ARM no record-tgid; fi
  grep -q mono "$I/trace_clock" && echo mono 2>/dev/null > "$I/trace_clock"
  echo 1 2>/dev/null > "$I/tracing_on"
  reader_start
  # The reader would outlive an agent killed by a signal it cannot catch (KILL) and hold the client's stream open,
  # so the client would never see the agent end and sweep what it left: a guard ends the reader within a second of
  # the agent. It holds none of the agent's streams.
  ( trap '' HUP INT QUIT TERM; while kill -0 $$ 2>/dev/null; do sleep 1; done; kill "$CAT" 2>/dev/null ) < /dev/null > /dev/null 2>&1 &
  GUARD=$!
  # A session may start with no definition yet (every spec refused): it is armed, and EV ON adds events later.
  if [ ! -d "$I/events/$G" ] || [ "$1" = hist ] || echo 1 2>/dev/null > "$I/events/$G/enable"; then
    STATE=armed
    fw_sync
    say OK ARM "clock=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$I/trace_clock")" "watch=$([ -n "$FWPID" ] && echo 1 || echo 0)" "stream=$([ "$RAW" = 1 ] && echo raw || echo text)"
  else say ERR ARM EKERNEL "enabling the events failed"; fi
}

# Live edits of an armed session touch one event of our group and nothing else.
our_event() {
  case "$1" in '' | [0-9]* | *[!A-Za-z0-9_]*) return 1 ;; esac
  [ -d "$I/events/$G/$1" ]
}

# EV ON|OFF <event>: enable or disable one event in our instance; OFF replies with its kernel hit count.
ev() {
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $1
  set +f
  [ $# -eq 2 ] || { say ERR EV EPROTO "usage: EV ON|OFF <event>"; return; }
  case "$1" in ON) v=1 ;; OFF) v=0 ;; *) say ERR EV EPROTO "usage: EV ON|OFF <event>"; return ;; esac
  our_event "$2" || { say ERR EV ENOENT "no event $2 in this session"; return; }
  if [ $v = 1 ] && ! fw_ev_ok "$2"; then say ERR EV ECHANGED "the file event $2 probes was written over since it was armed: trace again to probe the new build"; return; fi
  if ! echo $v 2>/dev/null > "$I/events/$G/$2/enable"; then say ERR EV EKERNEL "cannot set $2/enable to $v"; return; fi
  if [ $v = 0 ]; then profile_of "$2"; say OK EV "hits=$PN"; else say OK EV; fi
}

# UNDEF <event>: disable it, read its kernel hit count, remove its definition. The kernel resets the whole
# ring buffer of every instance the removed event was ever enabled in (its unread entries would name a freed
# event), which would silently drop the other probes' unread hits: so wait (bounded) until the reader has
# consumed everything, and report what was still unread at removal.
undef() {
  our_event "$1" || { say ERR UNDEF ENOENT "no event $1 in this session"; return; }
  echo 0 2>/dev/null > "$I/events/$G/$1/enable"
  profile_of "$1"
  k=0
  unread
  while [ -n "$CAT" ] && [ "$UNREAD" != 0 ] && [ $k -lt 100 ]; do
    sleep 0.02 2>/dev/null || sleep 1
    k=$((k + 1))
    unread
  done
  [ -n "$CAT" ] || UNREAD=0
  # The reset also zeroes the per-CPU loss counters: report them as they were.
  cpu_stats UNDEF
  if printf '%s\n' "-:$G/$1" 2>/dev/null >> "$T/uprobe_events"; then say OK UNDEF "hits=$PN" "unread=$UNREAD"
  else say ERR UNDEF EKERNEL "the kernel refused to remove $1"; fi
}

# STOP answers as soon as the session's records are complete, and disarms after: disabling costs the kernel one
# synchronisation (about 45 ms) per event, and nobody needs to wait for it. The cut is the instance's tracing_on
# (nothing more is recorded, at once); the kernel's counts go on while the events stay enabled, so they are read
# on both sides of it (profile-before, profile) and the client knows the count at the cut lies between the two.
# The last file check runs after the cut, so it covers every record; it cannot write markers then (the buffer is
# off) and says its verdicts on stderr only. Once the reply is out, stdout and stderr are closed (the client's
# stream ends, the client may go, over SSH its connection too) and every signal is ignored, so the teardown runs
# to its end however the client leaves; were the agent killed meanwhile, its group would be a dead owner's
# leftover for the next session's sweep.
stop() {
  on_signals ''
  unwatch
  PROF0=
  if [ -n "$G" ]; then
    fw_stop
    read_profile "$G/" && PROF0=$PROF
    [ -f "$I/tracing_on" ] && echo 0 2>/dev/null > "$I/tracing_on"
    # Triggers count on past the cut: their figures are read between the two profile reads.
    hist_stop_report
    fw_final
    drain_reader
    report_stats
  fi
  say OK STOP
  exec > /dev/null 2>&1 < /dev/null
  cleanup
  exit 0
}

# Every catchable signal that would end the shell ends it through quit (dash and busybox run no EXIT trap on an
# untrapped one), and the EXIT trap covers a fatal shell error. Each is NAME NUMBER CODE: a name this shell does
# not know (dash has no STKFLT) is trapped by its number, the one x86 and the generic Linux ABI (arm, arm64,
# riscv) use; "command" keeps a failing trap from ending the shell. CODE is 128 + that number. Real-time signals
# go by number. CHLD, CONT, URG, WINCH and the stop signals do not end a process.
# on_signals quit: install; on_signals '': ignore them all (while cleaning up).
on_signals() {
  mode=$1
  set -- HUP 1 129 INT 2 130 QUIT 3 131 ILL 4 132 TRAP 5 133 ABRT 6 134 BUS 7 135 FPE 8 136 USR1 10 138 SEGV 11 139 \
    USR2 12 140 ALRM 14 142 TERM 15 143 STKFLT 16 144 XCPU 24 152 XFSZ 25 153 VTALRM 26 154 PROF 27 155 IO 29 157 \
    PWR 30 158 SYS 31 159
  while [ $# -ge 3 ]; do
    a=''
    [ "$mode" = quit ] && a="quit $3"
    command trap "$a" "$1" 2>/dev/null || command trap "$a" "$2" 2>/dev/null
    shift 3
  done
  n=32
  while [ $n -le 64 ]; do
    if [ "$mode" = quit ]; then command trap "quit $((128 + n))" $n 2>/dev/null; else command trap '' $n 2>/dev/null; fi
    n=$((n + 1))
  done
}

on_signals quit
trap cleanup EXIT

while :; do
  watch
  if ! read -r cmd rest; then quit 0; fi
  unwatch
  case "$STATE:$cmd" in
    init:HELLO) hello "$rest" ;;
    init:*) say ERR PROTO EPROTO "expected HELLO"; exit 2 ;;
    *:HB) fw_alive ;;
    *:PAUSE) matches '^[0-9]{1,5}$' "$rest" && PAUSE_S=$rest; fw_alive ;;
    *:DEF) def "$rest"; fw_sync ;;
    *:DEFS) defs "$rest"; fw_sync ;;
    *:WATCH) fw_watch "$rest" ;;
    *:WRITERS) fw_writers "$rest" ;;
    *:BUILDID) buildid "$rest" ;;
    *:PID) pid_filter "$rest" ;;
    *:PROCS) procs "$rest" ;;
    *:PIDFILE) pid_file "$rest" ;;
    *:FILTER) filter "$rest" ;;
    *:BUF) buf "$rest" ;;
    *:OVERWRITE) overwrite "$rest" ;;
    *:STATS) cpu_stats STATS; say OK STATS ;;
    *:FORCE) force "$rest" ;;
    ready:RAW) raw ;;
    *:FMT) fmt "$rest" ;;
    *:TGID) tgids "$rest" ;;
    ready:ARM) arm "$rest" ;;
    *:SYNTH) synth "$rest" ;;
    *:TRIG) trig "$rest" ;;
    *:HISTREAD) histread "$rest" ;;
    armed:EV) ev "$rest" ;;
    *:UNDEF) undef "$rest" ;;
    *:STOP) stop ;;
    *) say ERR PROTO EPROTO "unknown or misplaced command" ;;
  esac
done
