// When to redraw what changes with every hit (the counts beside traced lines): soon after the first change, and
// never more often than once per gap. A change while nothing is scheduled runs the redraw at the end of the gap
// since the last one (at once after a quiet spell); changes meanwhile join it. So a hit waits at most one gap for
// its count to be drawn, however many hits come, and the redraws cost at most one per gap. No `vscode` import:
// the latency benchmark drives it as the editor does.

/** The counts beside traced lines: redrawn at most this often (the editor's, and the latency benchmark's). */
export const INLINE_GAP_MS = 30;

export interface PacerClock {
  now(): number;
  setTimer(f: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const realClock: PacerClock = {
  now: () => performance.now(),
  setTimer: (f, ms) => setTimeout(f, ms),
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

export class Pacer {
  private timer: unknown;
  private last = -Infinity;

  constructor(
    private readonly gapMs: number,
    private readonly run: () => void,
    private readonly clock: PacerClock = realClock,
  ) {}

  /** Something changed: a redraw runs within one gap. */
  poke(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(0, this.last + this.gapMs - this.clock.now());
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      this.last = this.clock.now();
      this.run();
    }, wait);
  }

  dispose(): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
  }
}
