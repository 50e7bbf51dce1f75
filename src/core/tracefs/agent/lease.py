# The lease guard (watcher.sh, "The lease guard"), for a target with python3 only: started with PATH EVENTS_FILE EVENTS_DIR
# GROUP AGENT_PID, it forks, takes a read lease on PATH in the child, prints the pid of the child (or `E why`) and closes
# its output; when the lease is broken it reads EVENTS_FILE again until it holds every event of GROUP (see fw_ours).
# F_SETLEASE = 1024, F_GETLEASE = 1025, F_RDLCK = 0, F_UNLCK = 2 (Linux). No single quote: it is inlined inside them.
import fcntl, os, re, select, signal, sys
p, ue, ev, g, agent = sys.argv[1:6]
try:
    f = os.open(p, os.O_RDONLY)
except OSError:
    print("E open", flush=True)
    sys.exit(0)
if os.fork():
    os._exit(0)
def woken(*_):
    raise InterruptedError()
signal.signal(signal.SIGIO, woken)
try:
    fcntl.fcntl(f, 1024, 0)
except OSError as e:
    print("E", e.strerror, flush=True)
    os._exit(0)
print(os.getpid(), flush=True)
nul = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(nul, fd)
def alive():
    try:
        os.kill(int(agent), 0)
        return True
    except OSError:
        return False
while alive():
    try:
        if fcntl.fcntl(f, 1025) != 0:
            try:
                want = [n for n in os.listdir(ev) if os.path.isdir(ev + "/" + n)]
            except OSError:
                want = []
            lines = []
            for _ in range(50):
                try:
                    with open(ue) as u:
                        lines = [d for d in u if d.startswith(("p:" + g + "/", "r:" + g + "/"))]
                except OSError:
                    lines = []
                have = set(d.split(" ", 1)[0].split("/", 1)[1] for d in lines)
                if all(w in have for w in want):
                    break
            seen = set()
            for d in lines:
                m = re.match(r"[pr]:([^/ ]+)/(\S+) (\S+):", d)
                if m and m.group(1) == g and m.group(3) == p and m.group(2) not in seen:
                    seen.add(m.group(2))
                    try:
                        with open(ev + "/" + m.group(2) + "/enable", "w") as e:
                            e.write("0\n")
                    except OSError:
                        pass
            fcntl.fcntl(f, 1024, 2)
            os._exit(0)
        select.select([], [], [], 0.5)
    except InterruptedError:
        pass
