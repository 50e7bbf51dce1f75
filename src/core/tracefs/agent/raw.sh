# The binary stream: the RAW, FMT and TGID verbs, and the page pump that replaces `cat trace_pipe` once RAW was
# accepted.
# ---- The binary stream: ring-buffer pages instead of trace_pipe text ----
# With RAW accepted, stdout carries the instance's per-CPU trace_pipe_raw pages. One pump (a background loop) owns
# stdout and reads the CPUs in turn, so nothing is ever interleaved and pipe atomicity is not relied on: for every
# CPU, every round, it reads its stats file and writes a 64-byte header, "PLRAWCPU", the CPU number as 8 decimal
# digits, "LOST", the CPU's overrun + commit overrun + dropped events as 12, "NOWT" and the stats' "now ts" (the
# instance's clock) right-aligned in 28; then, when the CPU's buffer holds entries,
# "dd < per_cpu/cpuN/trace_pipe_raw", which returns whole pages (a page being written is copied out as it
# stands, padded to the page size) until the buffer is empty and then ends: the shell's redirection closes its own
# descriptor after moving it, which marks the reader closed, and a closed reader's empty buffer reads as end of
# file. dd, not cat: busybox cat reads the file with sendfile, which trace_pipe_raw does not serve (it ends at once,
# reading nothing). After the last CPU, the round's end: "PLRAWEND" and 56 zeros (its pages are all out: the client
# need not wait for the next round to know it). Bytes 12-15 of a header or round end are ASCII digits, which no
# page's commit word can hold there (its upper half is 0 or all ones), so the client tells them from pages exactly.
# A round that found nothing sleeps 0.02 s.
# The counters make the live loss exact (a full page has no room for the lost count, only a flag); the time tells
# the client that every record of that CPU taken before it has been shipped, so it can merge the CPUs in time order.
# RAW checks all of this on the target before it is used: a marker record written into the instance must come back
# as whole pages, and the read must end by itself once the buffer is empty (older kernels, 5.10 among them, block
# there: such a target keeps the text stream; the check notices in about 0.1 s).
RAW=0
RAWPS=0
RAWCPUS=
RAWDD=bs=65536

# The pump's dd operands for pages of $1 bytes: a page per read(2) (ibs), and the pages of one drain written in
# 64 KiB blocks (obs; the last one short, at the buffer's end), so a flood crosses the pipe and the SSH channel in
# a few large writes and packets, not one per page (each packet costs the client a decryption's setup). A dd
# without ibs/obs (a trimmed busybox) writes each page as it reads it.
raw_dd_blocks() {
  if dd ibs="$1" obs=65536 < /dev/null > /dev/null 2>&1; then printf 'ibs=%s obs=65536\n' "$1"; else printf 'bs=65536\n'; fi
}

# Reads the buffer of each CPU the marker can be on once: one whose stats count no entry is skipped (where reads of
# an empty buffer block, each would cost the whole bound: 3 s per CPU on 5.10). A read that had to be ended adds a
# stray byte "K", so the byte count is no longer whole pages.
raw_check_reads() {
  for c in $RAWCPUS; do
    [ "$(raw_entries "$c")" = 0 ] && continue
    dd bs=65536 < "$I/per_cpu/cpu$c/trace_pipe_raw" 2>/dev/null &
    rp=$!
    ( raw_check_guard "$rp" "$c" ) < /dev/null > /dev/null 2>&1 &
    rk=$!
    wait "$rp" || printf K
    kill "$rk" 2>/dev/null
    wait "$rk" 2>/dev/null
  done
}

# The entries CPU $1's buffer holds, as its stats say.
raw_entries() { sed -n 's/^entries: *\([0-9][0-9]*\).*/\1/p' "$I/per_cpu/cpu$1/stats" 2>/dev/null; }

# Ends the check's read $1 of CPU $2 once it is blocked: its buffer empty and the reader asleep in the kernel at two
# looks 0.05 s apart (a reader that is only starved of CPU is runnable, not asleep), or 0.5 s of an empty buffer
# where /proc does not show its state; else after 3 s.
raw_check_guard() {
  i=0 b=0
  while [ $i -lt 60 ]; do
    sleep 0.05 2>/dev/null || { sleep 3; break; }
    i=$((i + 1))
    st=$(sed -n 's/.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
    if [ "$(raw_entries "$2")" = 0 ] && { [ "$st" = S ] || [ -z "$st" ]; }; then b=$((b + 1)); else b=0; fi
    [ $b -ge 2 ] && [ -n "$st" ] && break
    [ $b -ge 10 ] && break
  done
  kill "$1"
}

# RAW: use the binary stream (before ARM). Replies with the instance's header_page and header_event as INFO lines
# ("page …", "event …") and "pagesize=N cpus=A,B,…"; ENOTSUP (the text stream stays) when the target cannot.
raw() {
  [ "$STATE" = ready ] || { say ERR RAW EPROTO "RAW goes before ARM"; return; }
  hp="$I/events/header_page"
  he="$I/events/header_event"
  [ -f "$he" ] || he="$T/events/header_event"
  # shellcheck disable=SC2015 # a failure of any check takes the error branch
  [ -f "$I/per_cpu/cpu0/trace_pipe_raw" ] && [ -f "$hp" ] && [ -f "$he" ] && [ -f "$I/trace_marker" ] \
    || { say ERR RAW ENOTSUP "this kernel's instances have no trace_pipe_raw, header_page or trace_marker"; return; }
  command -v dd > /dev/null 2>&1 || { say ERR RAW ENOTSUP "no dd on the target"; return; }
  RAWCPUS=$(for d in "$I"/per_cpu/cpu*; do printf '%s\n' "$d"; done | sed -n 's,.*/cpu\([0-9][0-9]*\)$,\1,p')
  ps=$(sed -n 's/^[[:space:]]*field:[[:space:]]*char data;[[:space:]]*offset:\([0-9]*\);[[:space:]]*size:\([0-9]*\);.*/\1 \2/p' "$hp")
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $ps
  set +f
  [ $# -eq 2 ] || { say ERR RAW ENOTSUP "cannot read the page size from $hp"; return; }
  RAWPS=$(($1 + $2))
  printf '%s\n' probelens_raw_check 2>/dev/null > "$I/trace_marker" || { say ERR RAW ENOTSUP "cannot write trace_marker"; return; }
  rb=$(raw_check_reads | wc -c | tr -dc 0-9)
  if [ -z "$rb" ] || [ "$rb" = 0 ] || [ $((rb % RAWPS)) != 0 ]; then
    say ERR RAW ENOTSUP "reading trace_pipe_raw returned $rb bytes for one marker, not whole $RAWPS-byte pages ending by themselves"
    return
  fi
  RAWDD=$(raw_dd_blocks "$RAWPS")
  RAW=1
  sed "s/^/$N INFO RAW page /" "$hp" >&2
  sed "s/^/$N INFO RAW event /" "$he" >&2
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  say OK RAW "pagesize=$RAWPS" "cpus=$(printf '%s\n' $RAWCPUS | tr '\n' , | sed 's/,$//')"
}

# The pump (a background subshell, its stdout the agent's): ends when the agent ($1) or the instance is gone, after
# the round in which USR1 came (STOP's drain: the shell runs the trap once the command it waits for is done), or
# when stop_reader ends it (a dd it started finishes its pages first: no page is ever cut).
raw_pump() {
  rpa=$1
  rpq=
  trap 'rpq=1' USR1
  while [ -z "$rpq" ] && kill -0 "$rpa" 2>/dev/null && [ -d "$I" ]; do
    # Every stats file is read whole by one cat (one read(2) each): the kernel builds the text anew at every read,
    # and the shell's read builtin takes a byte per call, which tears values that change meanwhile (the clock always
    # does). cat prints the CPUs in RAWCPUS's (glob) order; each block starts with "entries:".
    st=$(cat "$I"/per_cpu/cpu*/stats 2>/dev/null)
    rest=$RAWCPUS rows='' c='' e='' lo=0 nt=- p1='' p2=''
    set -f
    # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
    set -- $st
    set +f
    for w do
      case "$p1" in
        entries:)
          [ -n "$c" ] && rows="$rows$c $e $lo $nt
"
          set -f
          # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
          set -- $rest
          set +f
          c=$1 e=$w lo=0 nt=-
          shift; rest=$* ;;
        overrun:) lo=$((lo + w)) ;;
        events:) [ "$p2" = dropped ] && lo=$((lo + w)) ;;
        ts:) [ "$p2" = now ] && nt=$w ;;
      esac
      p2=$p1 p1=$w
    done
    [ -n "$c" ] && rows="$rows$c $e $lo $nt
"
    got=0
    while read -r c e lo nt; do
      [ -n "$c" ] || continue
      case "$nt" in '' | *[!0-9.]* | ?????????????????????????????*) nt=- ;; esac
      printf 'PLRAWCPU%08dLOST%012dNOWT%28s' "$c" "$lo" "$nt"
      [ "$e" = 0 ] && continue
      got=1
      # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
      dd $RAWDD < "$I/per_cpu/cpu$c/trace_pipe_raw" 2>/dev/null
    done <<RAW_ROWS
$rows
RAW_ROWS
    printf 'PLRAWEND%056d' 0
    [ "$got" = 1 ] || [ -n "$rpq" ] || sleep 0.02 2>/dev/null || sleep 1
  done
}

# Starts the stream's reader (CAT): the pump, or cat of trace_pipe.
reader_start() {
  if [ "$RAW" = 1 ]; then
    raw_pump "$$" < /dev/null 2>/dev/null &
  else
    cat "$I/trace_pipe" < /dev/null 2>/dev/null &
  fi
  CAT=$!
}

# FMT <event>|ftrace/print: the format file of one of our events (or of trace_marker's records) as INFO lines.
fmt() {
  if [ "$1" = ftrace/print ]; then f="$I/events/ftrace/print/format"
  else
    our_event "$1" || { say ERR FMT ENOENT "no event $1 in this session"; return; }
    f="$I/events/$G/$1/format"
  fi
  [ -f "$f" ] || { say ERR FMT ENOENT "no format file for $1"; return; }
  sed "s/^/$N INFO FMT /" "$f" >&2
  say OK FMT
}

# TGID <tid>…: the process (thread-group) id of each thread, as "INFO TGID <tid> <tgid>": from /proc while the thread
# lives, else from saved_tgids (record-tgid fills it at a context switch after an event and never clears it, so for
# a thread id reused since, it names the earlier thread's process until the new task is saved).
tgids() {
  matches '^[0-9]{1,10}( [0-9]{1,10}){0,199}$' "$1" || { say ERR TGID EINVAL "usage: TGID <tid>..."; return; }
  gone=
  for t in $1; do
    found=
    if [ -r "/proc/$t/status" ]; then
      while IFS= read -r l; do
        # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
        case "$l" in Tgid:*) set -f; set -- $l; set +f; say INFO TGID "$t" "$2"; found=1; break ;; esac
      done < "/proc/$t/status"
    fi
    [ -n "$found" ] && continue
    if [ -n "$gone" ]; then gone="$gone|$t"; else gone=$t; fi
  done
  [ -n "$gone" ] && grep -E "^($gone) [0-9]+$" "$T/saved_tgids" 2>/dev/null | sed "s/^/$N INFO TGID /" >&2
  say OK TGID
}

# At STOP (raw, or counting with hist triggers): every saved thread-group id, for the threads of the last pages or
# of the hist tables' last rows (asked of no one after the reply).
raw_stop_tgids() {
  { [ "$RAW" = 1 ] || [ -n "$HISTEV" ]; } && [ -f "$T/saved_tgids" ] && sed "s/^/$N INFO STOP tgid /" "$T/saved_tgids" >&2
  return 0
}
