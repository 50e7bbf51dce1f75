# The heartbeat watchdog (watch, unwatch, client_stopped): the agent cleans up when the client goes silent.
# The watchdog runs only while the agent waits for the client's next line, and fires $HBS seconds after it began
# waiting. While a command runs there is none: arming a thousand sites can keep the kernel busy for seconds while
# the client's heartbeats queue unread, and that is not the client going quiet (a watchdog that counted through
# commands, told "still here" only between steps, fired on busy machines). It is ended with KILL: a shell that
# receives a caught signal in the instant after fork, before it has reset its traps, loses it (dash does), and a
# watchdog that survived would fire in the middle of a healthy session. It sleeps in 1 s steps, so the sleep it
# leaves behind is gone within a second.
# A client that announced a pause (PAUSE: the user's Ctrl-Z over SSH, where its state is not visible here) is
# allowed that long for this one wait; any line from it ends the allowance.
# The watchdog is no child of the agent: it is started from a command substitution, which the agent waits for, so
# its end (KILL, every command) sends the agent no SIGCHLD. busybox sh loses what printf writes to a full pipe, and
# the line a read has half consumed, when a SIGCHLD interrupts them: a reply the client then waits for forever.
watch() {
  [ "$HBS" -gt 0 ] || return 0
  lim=$HBS
  if [ "$PAUSE_S" -gt 0 ]; then lim=$PAUSE_S; PAUSE_S=0; fi
  WD=$(
    (
      w=0
      while [ $w -lt "$lim" ]; do
        sleep 1
        w=$((w + 1))
        # A client that is stopped (Ctrl-Z, a debugger) is paused, not gone: its silence counts from when it runs
        # again, with as long again to catch up on what queued meanwhile.
        if client_stopped; then w=$((0 - lim)); fi
      done
      kill -ALRM $$ 2>/dev/null
    ) < /dev/null > /dev/null 2>&1 &
    echo $!
  )
}

# Whether the client that started this agent on this machine (the parent, or the parent of sudo or sh in
# between, at most three levels up) is stopped (state T or t). A client over SSH is not visible here: false.
# Builtins only (it runs every second): /proc/PID/stat is PID (COMM) STATE PPID …, and the comm may hold spaces
# and parentheses, so STATE is the field after the last one that ends in ")".
client_stopped() {
  p=$PPID
  for _ in 1 2 3; do
    read -r st < "/proc/$p/stat" 2>/dev/null || return 1
    set -f
    # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
    set -- $st
    set +f
    s=; p=
    while [ $# -gt 0 ]; do
      case "$1" in *")") s=$2; p=$3 ;; esac
      shift
    done
    case "$s" in T | t) return 0 ;; esac
    [ "$p" -gt 1 ] 2>/dev/null || return 1
  done
  return 1
}

unwatch() {
  [ -n "$WD" ] && kill -KILL "$WD" 2>/dev/null
  WD=
}
