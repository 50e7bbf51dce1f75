// The process id of each hit, as the target says it. A ring-buffer record carries the thread id only; trace_pipe's
// `(tgid)` is looked up when the line is printed, in the kernel's saved_tgids, which is filled at a context switch
// after an event on that CPU and never cleared: a thread id reused after a thread of another process keeps that
// process's id until the new task is first saved (the same window prints `<...>` for its comm). So the first hit of
// each thread is held until the agent has named its process (TGID: /proc for a live thread, saved_tgids for one that
// is gone), later hits of that thread wait behind it, and each thread's hits keep their order. A thread the target
// cannot name keeps the process id it came with (trace_pipe's, or its own thread id on the binary stream).
// Tests: test/unit/core/tracefs/hitProcesses.test.ts, test/integration/agent.test.ts
import type { Hit } from '../../shared/hit';

/** Asks the target for the process ids of threads; a thread it does not name is missing from the map. */
export type LookupTgids = (tids: number[]) => Promise<ReadonlyMap<number, number>>;

export class HitProcesses {
  private readonly known = new Map<number, number>();
  /** Threads whose process id is being asked, and their hits meanwhile, in order. */
  private readonly held = new Map<number, Hit[]>();
  private ask: number[] = [];
  private ended = false;
  private final: ReadonlyMap<number, number> | undefined;

  constructor(
    private readonly onHit: (hit: Hit) => void,
    private readonly lookup?: LookupTgids,
  ) {}

  /** Hits held for their process id now. */
  get waiting(): number {
    let n = 0;
    for (const hits of this.held.values()) n += hits.length;
    return n;
  }

  deliver(h: Hit): void {
    const waiting = this.held.get(h.tid);
    if (waiting) {
      waiting.push(h);
      return;
    }
    const pid = this.known.get(h.tid);
    if (pid !== undefined || !this.lookup || this.ended) {
      h.pid = pid ?? this.final?.get(h.tid) ?? h.pid;
      this.onHit(h);
      return;
    }
    this.held.set(h.tid, [h]);
    if (this.ask.push(h.tid) === 1) queueMicrotask(() => this.askTarget());
  }

  /**
   * End of stream: what is still held is delivered now, with `tgids` (STOP's saved thread-group ids) where the
   * target had not answered yet, else the process id each hit came with.
   */
  end(tgids?: ReadonlyMap<number, number>): void {
    this.ended = true;
    this.final = tgids;
    for (const [tid, hits] of this.held) {
      const pid = this.known.get(tid) ?? tgids?.get(tid);
      for (const h of hits) this.onHit(pid !== undefined ? { ...h, pid } : h);
    }
    this.held.clear();
  }

  private askTarget(): void {
    const tids = this.ask;
    this.ask = [];
    if (this.ended) return;
    this.lookup!(tids).then(
      (found) => {
        if (this.ended) return;
        for (const tid of tids) {
          const hits = this.held.get(tid) ?? [];
          this.held.delete(tid);
          const pid = found.get(tid) ?? hits[0]?.pid ?? tid;
          this.known.set(tid, pid);
          for (const h of hits) {
            h.pid = pid;
            this.onHit(h);
          }
        }
      },
      // The agent is gone or stopping: end() settles them.
      () => undefined,
    );
  }
}
