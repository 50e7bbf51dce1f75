# In-kernel aggregation: hist triggers on the session's own events and on its own synthetic events, read back
# from their `hist` files, and removed with everything else.
#
# Order matters to the kernel: a trigger must be removed before its event can be, a trigger that reads another's
# variable (onmatch … $ts0) before the one that defines it, and a synthetic event after every trigger that names
# it. The agent removes its triggers newest first (the client adds them in dependency order), then its synthetic
# events, then its group; a dead owner's are removed from what tracefs lists, retried while that makes progress.
# TRIGS: "<trigger file> <trigger>" lines of ours, newest first; SYNTHS: our synthetic events; HISTEV: the
# events (ours, or synthetic ones of ours) whose hist files STOP reads.
TRIGS=
SYNTHS=
HISTEV=

hist_errlog() {
  [ -f "$I/error_log" ] || return 0
  a=; b=; c=
  while IFS= read -r l; do a=$b; b=$c; c=$l; done < "$I/error_log"
  say INFO "$1" "$a"; say INFO "$1" "$b"; say INFO "$1" "$c"
}

# SYNTH <name>: the synthetic event <name> with one field, u64 lat (an entry->return latency in ns). Named after
# the group, so a sweep knows its owner.
synth() {
  matches '^'"$G"'_l[0-9]{1,4}$' "$1" || { say ERR SYNTH EINVAL "synthetic event name refused by the agent's pattern"; return; }
  [ -f "$T/synthetic_events" ] || { say ERR SYNTH ENOHIST "this kernel has no synthetic events (CONFIG_SYNTH_EVENTS is off)"; return; }
  if printf '%s\n' "$1 u64 lat" 2>/dev/null >> "$T/synthetic_events"; then
    SYNTHS="$SYNTHS $1"
    say OK SYNTH
  else say ERR SYNTH EKERNEL "the kernel refused synthetic event $1"; fi
}

# TF := the trigger file of $1 in our instance: an event of our group, or a synthetic event of ours.
trig_file() {
  case " $SYNTHS " in
    *" $1 "*) TF="$I/events/synthetic/$1/trigger" ;;
    *) our_event "$1" || return 1; TF="$I/events/$G/$1/trigger" ;;
  esac
  [ -f "$TF" ]
}

# Only hist triggers, keyed and valued by field names, with the parameters ProbeLens uses (no name=, which would
# share another tracer's histogram), and an onmatch action only between events of ours.
trig_pattern() {
  # shellcheck disable=SC2016 # a literal $ (a pattern or a program text), not an expansion
  re='^hist:keys=[A-Za-z0-9_.,]{1,200}(:(vals|clock|size|ts0|lat)=[A-Za-z0-9_.,$+-]{1,200})*(:onmatch\('"$G"'\.[A-Za-z_][A-Za-z0-9_]{0,62}\)\.trace\('"$G"'_l[0-9]{1,4}(,[$A-Za-z0-9_]{1,64})*\))?$'
}

# TRIG <event> <trigger>
trig() {
  ev=$(printf '%s\n' "$1" | sed 's/ .*//')
  tx=$(printf '%s\n' "$1" | sed 's/^[^ ]* *//')
  trig_pattern
  matches "$re" "$tx" || { say ERR TRIG EINVAL "trigger refused by the agent's pattern"; return; }
  trig_file "$ev" || { say ERR TRIG ENOENT "no event $ev in this session"; return; }
  if printf '%s\n' "$tx" 2>/dev/null >> "$TF"; then
    TRIGS="$TF $tx
$TRIGS"
    case " $HISTEV " in *" $ev "*) ;; *) HISTEV="$HISTEV $ev" ;; esac
    say OK TRIG
  else
    hist_errlog TRIG
    say ERR TRIG EKERNEL "the kernel rejected the trigger"
  fi
}

# The tables of $2's hist file (one per trigger, each headed by its trigger's text) as INFO lines of verb $1:
# "hist <event> <line>". Keys are numbers (pids, site numbers, values, log2 buckets), a task's name made of plain
# characters (no comma, no brace, no control), or a kernel function a return address names ("[ADDR] NAME", a
# module's "[MODULE]" after it): a line of any other shape is not passed on.
hist_lines() {
  trig_file "$2" || return 0
  hf=$(printf '%s\n' "$TF" | sed 's,/trigger$,/hist,')
  # shellcheck disable=SC2016 # a literal $ (a pattern or a program text), not an expansion
  grep -E '^# trigger info: hist:[A-Za-z0-9_.,:=$()+-]+ \[[a-z]+\] *$|^\{ [a-z0-9_.:, ~^-]+ \} hitcount: *[0-9]+ *$|^\{ probelens_comm: [][A-Za-z0-9_.:/@+=#%()<>-][][A-Za-z0-9_.:/@+=#%()<> -]* \} hitcount: *[0-9]+ *$|^\{ (probelens_site: *[0-9]+, )?probelens_caller: \[[0-9a-f]+\] [A-Za-z0-9_.]+( \[[A-Za-z0-9_]+\])? *\} hitcount: *[0-9]+ *$|^ *(Hits|Entries|Dropped): *[0-9]+ *$' "$hf" 2>/dev/null \
    | sed "s/^/$N INFO $1 hist $2 /" >&2
}

# HISTREAD <event>
histread() {
  matches '^[A-Za-z_][A-Za-z0-9_]{0,62}$' "$1" || { say ERR HISTREAD EINVAL "not an event name"; return; }
  trig_file "$1" || { say ERR HISTREAD ENOENT "no event $1 in this session"; return; }
  hist_lines HISTREAD "$1"
  say OK HISTREAD
}

hist_stop_report() {
  for ev in $HISTEV; do hist_lines STOP "$ev"; done
}

# Our triggers (newest first), then our synthetic events.
unhist() {
  [ -n "$TRIGS" ] && printf '%s' "$TRIGS" | while IFS= read -r l; do
    [ -n "$l" ] || continue
    f=$(printf '%s\n' "$l" | sed 's/ .*//')
    printf '%s\n' "!$(printf '%s\n' "$l" | sed 's/^[^ ]* //')" 2>/dev/null >> "$f"
  done
  TRIGS=
  for s in $SYNTHS; do printf '%s\n' "!$s" 2>/dev/null >> "$T/synthetic_events"; done
  SYNTHS=
}

# A dead owner $1's triggers, as its instance lists them (the kernel's own text, less its state), and its
# synthetic events. A trigger another still reads is refused until that one is gone: passes go on while one
# removes something.
unhist_leftover() {
  k=0
  while [ $k -lt 5 ]; do
    k=$((k + 1))
    left=0
    for f in "$T/instances/$1/events/$1"/*/trigger "$T/instances/$1/events/synthetic/$1"_l*/trigger; do
      [ -f "$f" ] || continue
      # shellcheck disable=SC2013 # one word per line: names of [A-Za-z0-9_] only
      for t in $(grep '^hist:' "$f" 2>/dev/null | sed 's/ .*//'); do
        printf '%s\n' "!$t" 2>/dev/null >> "$f" || left=1
      done
    done
    [ $left = 0 ] && break
  done
  [ -f "$T/synthetic_events" ] || return 0
  # shellcheck disable=SC2013 # one word per line: names of [A-Za-z0-9_] only
  for s in $(sed -n 's/^\('"$1"'_l[0-9]*\)[[:space:]].*/\1/p' "$T/synthetic_events"); do
    printf '%s\n' "!$s" 2>/dev/null >> "$T/synthetic_events"
  done
}
