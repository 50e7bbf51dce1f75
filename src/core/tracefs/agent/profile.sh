# The kernel's counts: hits per probe point (read_profile, profile_of: uprobe_profile, kprobe_profile) and the
# per-CPU ring-buffer stats (cpu_stats, report_stats, unread).
# PROF := the profile lines (one per probe point) of the definitions that name "$1" after their kind ("GROUP/"
# or "GROUP/EVENT "): uprobe_profile's ("PATH EVENT HITS"), then kprobe_profile's, written the same way ("kernel EVENT
# HITS"; its count of missed hits is not a hit: KMISS holds those). A profile names events without their group and lists them in its
# definitions file's order, so the two are paired line by line: by one awk where there is one (a few ms for thousands
# of points), else pasted side by side (paste, grep and sed: ~0.6 s for 4,000 points here, most of it grep's
# back-reference; never the shell's read, which takes a byte per system call). Other tracers add and remove events at any time,
# which shifts one file against the other between the two reads: every pair must name the same event, else both
# are read again; and a read cut short by a removal (the kernel's reader resumes by position) misses lines, so the
# lines of ours are counted too: only this agent adds or removes them, so the most any read finds is all of them.
read_profile() {
  PROF=''
  KMISS=''
  if command -v awk >/dev/null 2>&1; then rp_awk=1
  elif command -v paste >/dev/null 2>&1; then rp_awk=0
  else return 1
  fi
  rp_found=1
  rp_all_kinds=
  for rp_kind in uprobe kprobe; do
    [ -f "$T/$rp_kind"_profile ] || continue
    if [ $rp_kind = kprobe ]; then
      # Only a session of kernel probes has any: most never read kprobe_profile at all.
      grep -q "^[pr][0-9]*:$1" "$T/kprobe_events" 2>/dev/null || continue
      rp_same='^[pr][0-9]*:[^/]*/\([^ ]*\) .*| *\1 '
    else
      rp_same='^[pr]:[^/]*/\([^ ]*\) .*| *[^ ]* *\1 '
    fi
    read_profile_of "$1" || return 1
    if [ $rp_kind = kprobe ]; then
      # Misses are calls the kernel never handed to the event (a return probe with every instance in use, a hit
      # inside another probe's handler): not hits, but calls lost, reported apart ("EVENT MISSES", nonzero only).
      KMISS=$(printf '%s\n' "$PROF" | sed -n 's/^ *\([^ ][^ ]*\)  *[0-9][0-9]*  *\([1-9][0-9]*\)$/\1 \2/p')
      PROF=$(printf '%s\n' "$PROF" | sed -n 's/^ *\([^ ][^ ]*\)  *\([0-9][0-9]*\)  *[0-9][0-9]*$/kernel \1 \2/p')
    fi
    rp_found=0
    if [ -n "$rp_all_kinds" ] && [ -n "$PROF" ]; then rp_all_kinds="$rp_all_kinds
$PROF"
    elif [ -n "$PROF" ]; then rp_all_kinds=$PROF
    fi
  done
  PROF=$rp_all_kinds
  return $rp_found
}

# PROF := the lines of "$rp_kind"_profile paired with the definitions naming "$1" (rp_same: a pair names one event).
read_profile_of() {
  rp_max=0
  rp_try=0
  while [ $rp_try -lt 100 ]; do
    rp_try=$((rp_try + 1))
    # Events added at the end meanwhile make one file longer: they follow every pair compared.
    if [ $rp_awk = 1 ]; then
      # One process reads both files, checks every pair and prints ours (status 1: a pair differs; 2: a definition
      # of ours has no profile line, the profile having been read shorter).
      PROF=$(awk -v kind=$rp_kind -v ours="$1" "$RP_PAIRS" "$T/$rp_kind"_events "$T/$rp_kind"_profile) && return 0
      continue
    fi
    rp_n=$(grep -c "^[pr][0-9]*:$1" "$T/$rp_kind"_events)
    [ "$rp_n" -gt "$rp_max" ] && rp_max=$rp_n
    rp_all=$(paste -d '|' "$T/$rp_kind"_events "$T/$rp_kind"_profile | grep -v '^|' | grep -v '|$')
    printf '%s\n' "$rp_all" | grep -v '^$' | grep -vq "$rp_same" && continue
    PROF=$(printf '%s\n' "$rp_all" | grep "^[pr][0-9]*:$1" | sed 's/^[^|]*|//')
    rp_got=0
    [ -n "$PROF" ] && rp_got=$(printf '%s\n' "$PROF" | grep -c .)
    [ "$rp_got" -gt "$rp_max" ] && rp_max=$rp_got
    [ "$rp_got" = "$rp_max" ] && return 0
  done
  PROF=''
  return 1
}

# The pairing as one awk program: the definitions (first file) against the profile (second), line by line as far as
# both go; each pair must name the same event (a profile line is "PATH EVENT HITS", a kprobe's "EVENT HITS
# MISSES"), every definition naming "ours" after its kind must have its pair, and their profile lines are printed
# once all of that holds.
# shellcheck disable=SC2016 # a literal $ (a pattern or a program text), not an expansion
RP_PAIRS='
BEGIN { col = kind == "kprobe" ? 1 : 2 }
NR == FNR { d[FNR] = $0; nd = FNR; next }
{ p[FNR] = $0; np = FNR }
END {
  n = nd < np ? nd : np
  for (i = 1; i <= n; i++) {
    if (d[i] == "") continue
    l = d[i]
    sub(/^[pr][0-9]*:/, "", l)
    e = substr(l, index(l, "/") + 1)
    if (index(e, " ")) e = substr(e, 1, index(e, " ") - 1)
    split(p[i], f, " ")
    if (f[col] != e) exit 1
    if (index(l, ours) == 1) mine[i] = 1
  }
  for (i = n + 1; i <= nd; i++) {
    l = d[i]
    if (sub(/^[pr][0-9]*:/, "", l) && index(l, ours) == 1) exit 2
  }
  for (i = 1; i <= n; i++) if (i in mine) print p[i]
}'

# PN := the profile's hit count of our event $1, summed over its probe points.
profile_of() {
  PN=0
  read_profile "$G/$1 " || return 0
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $PROF
  set +f
  while [ $# -ge 3 ]; do
    PN=$((PN + $3))
    shift 3
  done
}

# Raw lines, no per-line processes (fork is slow on loaded hosts); the client parses them. Each file is read whole
# by one cat (see unread) and its lines then taken from the copy.
cpu_stats() {
  for d in "$I"/per_cpu/cpu*; do
    [ -f "$d/stats" ] || continue
    cs=$(cat "$d/stats" 2>/dev/null) || continue
    while IFS= read -r l; do say INFO "$1" stat "$d" "$l"; done <<CPU_STATS
$cs
CPU_STATS
  done
}

# One line of uprobe_profile per probe point of ours, as the client reads them: "profile" as read after the cut,
# "profile-before" as read just before it (PROF0); "missed" for each kernel probe point the kernel missed calls of.
report_stats() {
  cpu_stats STOP
  [ -n "$PROF0" ] && printf '%s\n' "$PROF0" | sed "s/^/$N INFO STOP profile-before /" >&2
  read_profile "$G/" && [ -n "$PROF" ] && printf '%s\n' "$PROF" | sed "s/^/$N INFO STOP profile /" >&2
  [ -n "$KMISS" ] && printf '%s\n' "$KMISS" | sed "s/^/$N INFO STOP missed /" >&2
  raw_stop_tgids
  return 0
}

# UNREAD := entries the reader has not consumed yet, over every CPU.
unread() {
  UNREAD=0
  # One cat reads every stats file whole (one read(2) each): the shell's read takes a byte per call, and the kernel
  # builds the text anew at every read, which tears a value that changes meanwhile.
  ur=$(cat "$I"/per_cpu/cpu*/stats 2>/dev/null)
  set -f
  # shellcheck disable=SC2086 # split into words on purpose (globbing off, or values that hold no glob character)
  set -- $ur
  set +f
  ur_p=
  for w do
    if [ "$ur_p" = entries: ]; then case "$w" in '' | *[!0-9]*) ;; *) UNREAD=$((UNREAD + w)) ;; esac; fi
    ur_p=$w
  done
}
