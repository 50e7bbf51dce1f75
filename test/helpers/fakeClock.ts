// A clock the test moves by hand, for the editor's pacing (Pacer, PanelFeed).
import type { PacerClock } from '../../src/vscode/model/pacer';

/** A clock the test moves by hand. */
export function fakeClock(): PacerClock & { advance(ms: number): void } {
  let now = 0;
  let timers: Array<{ at: number; f: () => void }> = [];
  return {
    now: () => now,
    setTimer(f, ms) {
      const t = { at: now + ms, f };
      timers.push(t);
      return t;
    },
    clearTimer(h) {
      timers = timers.filter((t) => t !== h);
    },
    advance(ms) {
      const end = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.f();
      }
      now = end;
    },
  };
}
