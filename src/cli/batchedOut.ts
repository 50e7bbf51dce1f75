// The CLI's output, written in batches: what one turn of the event loop produced (a stream's chunk of hits), at most
// 64 KiB at a time. Each write to a file or pipe is a system call, which cost more than the hit line it carried
// (bench:stream: about 5 µs of a hit's client CPU went to its own write).
// Tests: test/unit/cli/batchedOut.test.ts

export interface BatchedOut {
  /** Queues `text`; it is written at the end of this turn of the event loop, or at once past 64 KiB queued. */
  out(text: string): void;
  /** Writes what is queued now. */
  flush(): void;
}

export function batchedOut(write: (text: string) => void, limit = 65536): BatchedOut {
  let batch: string[] = [];
  let size = 0;
  let due = false;
  const flush = () => {
    due = false;
    if (batch.length === 0) return;
    const text = batch.length === 1 ? batch[0] : batch.join('');
    batch = [];
    size = 0;
    write(text);
  };
  return {
    out(text) {
      batch.push(text);
      size += text.length;
      if (size >= limit) flush();
      else if (!due) {
        due = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}
