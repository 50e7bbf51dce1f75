// The one shape of a hit, from the trace parser to the webview: the engine produces it, the CLI and the panel
// serialise it with the same function (./hitJson), and the panel's column batches (./protocol) encode it.
// Side-effect free and free of Node and VS Code imports: the webview bundle imports it too.
import type { Site } from './site';

export type ProbeKind = 'entry' | 'return' | 'line' | 'usdt';
/** Every kind in a fixed order: the column batches send a kind as its index here. */
export const PROBE_KINDS: readonly ProbeKind[] = ['entry', 'return', 'line', 'usdt'];

/**
 * A fetched value, already in the JSON rule's terms (docs/contracts.md): integers as numbers when |v| < 2^53,
 * otherwise decimal strings; hex-typed values and pointers as "0x…" strings; text as it is; a fetch that
 * faulted as null; fixed-size arrays (`u8[4]`) as arrays.
 */
export type HitValue = number | string | null | HitValue[];

export interface Hit {
  host: string;
  /**
   * The probe the hit counts under: a spec's events in one function (a function probe is one event per site) are
   * one probe, named by its entry site's event (else its first event's); `site` says where this hit ran.
   */
  probe: string;
  kind: ProbeKind;
  pid: number;
  /** The process's PID in its own PID namespace, where it differs from `pid` (a container's process, `--pid`). */
  nsPid?: number;
  tid: number;
  comm: string;
  cpu: number;
  /** seconds on the target's trace clock */
  ts: number;
  args: Record<string, HitValue>;
  retval?: HitValue;
  /** entry→return latency in nanoseconds, on a return paired with its entry (per thread, or per goroutine for Go) */
  latencyNs?: number;
  /** the copy of the function's code the hit ran in */
  site?: Site;
  /** The function that called the kernel function this entry is of (counts by caller, `--by caller`). */
  caller?: string;
  /** Arguments of the spec this site cannot fetch, each with why (this copy has no such parameter, it is optimized out here, …). */
  unavailable?: Record<string, string>;
  /**
   * Arguments (names in `args`) read from the calling convention's registers because DWARF gives no location for
   * them at all: right when the caller followed the C ABI, which an optimizing compiler need not do.
   */
  inferred?: string[];
  /**
   * String arguments (names in `args`) whose value is only the beginning of a longer string: the kernel reads
   * strings of at most 4,095 bytes, and a longer one is shown by its first bytes, never as if complete.
   */
  cut?: string[];
  /**
   * The probe point that fired (a site's own name; the points of one probe may share a tracefs event, which the
   * parser reads first): pairs entries with returns and counts source lines inside the engine; never serialised
   */
  event: string;
}

/** Index of the log2 bucket a latency falls in: [2^i, 2^(i+1)) ns; 0 and 1 ns share bucket 0. */
export function log2Bucket(ns: number): number {
  if (!(ns >= 2)) return 0;
  let i = Math.floor(Math.log2(ns));
  // log2 rounds near large powers of two; settle the edge exactly.
  if (2 ** i > ns) i--;
  else if (2 ** (i + 1) <= ns) i++;
  return Math.min(63, i);
}
