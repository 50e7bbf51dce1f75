// The CLI's output, written in batches: what one turn of the event loop produced (a stream's chunk of hits), at most
// 64 KiB at a time. Each write to a file or pipe is a system call, which cost more than the hit line it carried
// (bench:stream: about 5 µs of a hit's client CPU went to its own write). A batch is handed over as its UTF-8 bytes,
// encoded by TextEncoder.encodeInto in one pass: a string written to a stream is measured and then encoded by V8's
// UTF-8 writer, which took a quarter of a hit's client CPU on the binary stream.
// Tests: test/unit/cli/batchedOut.test.ts

export interface BatchedOut {
  /** Queues `text`; it is written at the end of this turn of the event loop, or at once past 64 KiB queued. */
  out(text: string): void;
  /** Writes what is queued now. */
  flush(): void;
}

const encoder = new TextEncoder();

/** `text` as UTF-8, byte for byte what Buffer.from(text) makes (a lone surrogate as U+FFFD). */
export function utf8Bytes(text: string): Uint8Array {
  // A UTF-16 unit never takes more than 3 bytes; past 1 MiB of text the room is not worth it.
  if (text.length > 1 << 20) return Buffer.from(text, 'utf8');
  const room = Buffer.allocUnsafe(text.length * 3);
  return room.subarray(0, encoder.encodeInto(text, room).written);
}

export function batchedOut(write: (bytes: Uint8Array) => void, limit = 65536): BatchedOut {
  let batch: string[] = [];
  let size = 0;
  let due = false;
  const flush = () => {
    due = false;
    if (batch.length === 0) return;
    const text = batch.length === 1 ? batch[0] : batch.join('');
    batch = [];
    size = 0;
    write(utf8Bytes(text));
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
