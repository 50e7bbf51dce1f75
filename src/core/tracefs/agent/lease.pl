# The lease guard (watcher.sh, "The lease guard"), for a target with perl: started with PATH EVENTS_FILE EVENTS_DIR
# GROUP AGENT_PID, it forks, takes a read lease on PATH in the child, prints the pid of the child (or `E why`) and closes
# its output; when the lease is broken it reads EVENTS_FILE again until it holds every event of GROUP (see fw_ours).
# F_SETLEASE = 1024, F_GETLEASE = 1025, F_RDLCK = 0, F_UNLCK = 2 (Linux). No single quote: it is inlined inside them.
use strict;
my ($p, $ue, $ev, $g, $agent) = @ARGV;
open(my $f, "<", $p) or do { print "E open\n"; exit 0 };
my $pid = fork();
defined $pid or do { print "E fork\n"; exit 0 };
exit 0 if $pid;
$SIG{IO} = sub {};
fcntl($f, 1024, 0) or do { print "E $!\n"; exit 0 };
print "$$\n";
open(STDOUT, ">", "/dev/null"); open(STDERR, ">", "/dev/null"); open(STDIN, "<", "/dev/null");
while (kill(0, $agent)) {
  my $l = fcntl($f, 1025, 0);
  if (defined($l) && $l != 0) {
    my @want;
    if (opendir(my $dh, $ev)) { @want = grep { !/^[.]/ && -d "$ev/$_" } readdir($dh); closedir($dh); }
    my @lines;
    for my $try (1 .. 50) {
      @lines = ();
      if (open(my $u, "<", $ue)) { @lines = grep { m{^[pr]:\Q$g\E/} } <$u>; close($u); }
      my %have = map { m{^[pr]:[^/ ]+/(\S+) } ? ($1 => 1) : () } @lines;
      last unless grep { !$have{$_} } @want;
    }
    my %seen;
    for my $d (@lines) {
      next unless $d =~ m{^[pr]:([^/ ]+)/(\S+) (\S+):};
      next unless $1 eq $g && $3 eq $p && !$seen{$2}++;
      if (open(my $e, ">", "$ev/$2/enable")) { print $e "0\n"; close($e); }
    }
    fcntl($f, 1024, 2);
    exit 0;
  }
  select(undef, undef, undef, 0.5);
}
