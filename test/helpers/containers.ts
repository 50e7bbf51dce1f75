// Programs in containers as a container runtime makes them (util-linux unshare: new mount, PID and UTS namespaces,
// a root of their own) for the tests of `ps`, `trace --pid` and the editor's process choice.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** The argv prefix that runs a program in new mount, PID and UTS namespaces under a root (then ROOT PROGRAM ARGS). */
export const CONTAINER = ['unshare', '--mount', '--pid', '--uts', '--fork', 'chroot'];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Prints its PID, waits for a byte on stdin, then calls work() as often as its first argument says. */
export const PROGRAM = `#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
__attribute__((noinline)) int work(int n) { __asm__ volatile("" ::: "memory"); return n * 3; }
int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 1;
  /* "fork": the calls are made by a child, PID 2 in a new PID namespace. */
  if (argc > 2) {
    pid_t c = fork();
    if (c > 0) { int st; waitpid(c, &st, 0); return 0; }
  }
  printf("pid %d\\n", (int)getpid());
  fflush(stdout);
  char go;
  if (read(0, &go, 1) != 1) return 2;
  long t = 0;
  for (int i = 0; i < calls; i++) t += work(i);
  printf("done %ld\\n", t);
  fflush(stdout);
  return 0;
}
`;

export interface Running {
  child: ChildProcess;
  /** The working process's PID on the host. */
  hostPid: number;
  /** Its PID as it printed it (in its own namespace). */
  nsPid: number;
  /** Every host PID of the build in this run (a forking container's parent too). */
  all: number[];
  go(): void;
  done: Promise<string>;
}

const childrenOf = (pid: number): number[] => {
  const f = `/proc/${pid}/task/${pid}/children`;
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
};

/** Starts argv and waits for its PID line; `depth`: how many forks down the working process is. */
export async function start(argv: string[], depth: number): Promise<Running> {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const done = new Promise<string>((r) => child.once('close', () => r(out)));
  const until = Date.now() + 30_000;
  while (!/^pid \d+$/m.test(out)) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`${argv.join(' ')} did not start: ${out}`);
    await sleep(20);
  }
  // The host PIDs down the tree: unshare → its forked child (exec'd into chroot, then the program) → the forked worker.
  const chain = [child.pid!];
  for (let i = 0; i < depth; i++) chain.push(childrenOf(chain[chain.length - 1])[0]);
  return {
    child,
    hostPid: chain[chain.length - 1],
    nsPid: Number(/^pid (\d+)$/m.exec(out)![1]),
    all: chain.slice(argv[0] === 'unshare' ? 1 : 0),
    go: () => child.stdin!.end('g'),
    done,
  };
}
