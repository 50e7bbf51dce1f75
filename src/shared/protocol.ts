// The typed message protocol between the extension host and the live panel (vscode-hexeditor's shape:
// one union each way, plus a small request/response helper). Side-effect free: both the host bundle and
// the browser bundle import it.
//
// Hits travel column-oriented with a per-batch string table: at 100,000 hits/s the structured clone of
// one object per hit (with repeated host/probe/comm/arg-name strings) costs far more than a few flat
// arrays of numbers.

import { PROBE_KINDS, type Hit, type HitValue } from './hit';
import { Interner } from './interner';
import type { Site } from './site';
import { nameRecord } from './names';

export const PROTOCOL_VERSION = 3;

/** A hit travels as its columns in a `HitBatch`; `encodeHits`/`decodeHits` are exact inverses. */
export type { Hit, HitValue, ProbeKind } from './hit';
export type { Site } from './site';

/** What the panel knows about a probe: its name and where it sits in the source (for "open source"). */
export interface ProbeInfo {
  name: string;
  file?: string;
  line?: number;
  /** Counted in the kernel (hist triggers): its counts and latency are in the stats, and it has no hit rows. */
  aggregated?: true;
}

/** log2 latency histogram: `buckets[i]` counts latencies in [2^i, 2^(i+1)) ns (bucket 0 also holds 0 ns). */
export interface LatencyHistogram {
  buckets: number[];
  count: number;
  maxNs: number;
  /** One probe's percentiles, as the CLI summary and the hover have them (absent where probes are summed). */
  p50Ns?: number;
  p99Ns?: number;
}

/** One site's share of a probe's hits: the panel's per-site view. */
export interface SiteStats {
  site: Site;
  count: number;
  /** the site's latest hit's arguments and return value, as the table shows them */
  lastArgs: string;
  lastRet: string;
  /** of this site's hits, those that carried a latency, their sum and their maximum */
  latencyCount: number;
  latencySumNs: number;
  latencyMaxNs: number;
}

export interface PanelStats {
  /** hits per probe since the session (or the last clear) began */
  counts: Record<string, number>;
  /** per probe, its hits that name a site, broken down by site in the order the sites first hit */
  sites: Record<string, SiteStats[]>;
  latency: Record<string, LatencyHistogram>;
  /** events the kernel dropped (ring-buffer overflow), as the engine reports them */
  lost: number;
  /**
   * events the kernel counted for the probes that were neither received nor reported lost (negative: more
   * records than it counted), as the sessions' summaries say; 0 when they agree
   */
  mismatch: number;
  /** hits the host dropped before they reached the panel (its bounded queue overflowed) */
  historyDropped: number;
}

export type SessionState = 'idle' | 'starting' | 'tracing' | 'stopping' | 'stopped' | 'error';

export interface SessionInfo {
  state: SessionState;
  /** e.g. the error text, or "2 hosts" */
  detail?: string;
}

/**
 * Column-oriented batch of hits. Every column has `n` entries. Numeric columns are typed arrays: the
 * structured clone of a typed array is a memory copy, of a number[] an element-by-element walk (25x slower
 * at 5,000 rows), and VS Code (engine >= 1.57) recreates typed arrays inside the webview.
 */
export interface HitBatch {
  n: number;
  /** strings referenced by index from host, probe, event, comm and shapes */
  strings: string[];
  /** each shape is the list of arg names (string indices) a row's `args` values follow */
  shapes: number[][];
  /** the distinct sites of this batch's hits */
  sites: Site[];
  ts: Float64Array;
  host: Int32Array;
  probe: Int32Array;
  event: Int32Array;
  /** index into PROBE_KINDS */
  kind: Int32Array;
  pid: Int32Array;
  tid: Int32Array;
  comm: Int32Array;
  cpu: Int32Array;
  shape: Int32Array;
  /** all rows' arg values, flattened in shape order */
  args: HitValue[];
  /**
   * Each row's return value, read only where `hasRetval` is 1: an entry has none, and null is a value (the fetch
   * faulted). The flag is its own column because the webview's messages go as JSON, where `undefined` becomes null.
   */
  retval: (HitValue | undefined)[];
  hasRetval: Uint8Array;
  /** -1 when the hit has no latency */
  latencyNs: Float64Array;
  /** index into `sites`, -1 when the hit names none */
  site: Int32Array;
  /** the distinct argument notes (unavailable here, inferred) of this batch's hits */
  notes: HitNotes[];
  /** index into `notes`, -1 when the hit has none */
  note: Int32Array;
}

/**
 * What a hit says about its arguments beyond their values: unavailable and inferred are the same for every hit
 * of one probe; cut (a string read only in part) varies by hit, from a few lists the engine reuses.
 */
export type HitNotes = Pick<Hit, 'unavailable' | 'inferred' | 'cut'>;

export type ToWebview =
  | {
      type: 'init';
      version: string;
      protocol: number;
      probes: ProbeInfo[];
      stats: PanelStats;
      session: SessionInfo;
      /** the ring capacity the host keeps; the webview bounds its own history to the same */
      historyCapacity: number;
      /** how many hits the `hits` messages right after this one replay (the snapshot), for scroll restore */
      snapshotRows: number;
    }
  | { type: 'hits'; batch: HitBatch }
  | { type: 'probes'; probes: ProbeInfo[] }
  | { type: 'stats'; stats: PanelStats }
  | { type: 'session'; session: SessionInfo }
  | { type: 'cleared' }
  | Response;

export type ExportFormat = 'json' | 'csv';

export type FromWebview =
  | { type: 'ready' }
  | { type: 'export'; requestId: number; format: ExportFormat; filter: string }
  | { type: 'openSource'; probe: string; file?: string; line?: number }
  | { type: 'clear' }
  /** Flow control: this many `hits` messages were taken in and a frame has run since (see PanelFeed.drawn). */
  | { type: 'drawn'; batches: number };

/**
 * The `default` of a `switch` over every message type: it compiles only when every type has its case. At run time
 * a message no case knows (another version's) is ignored.
 */
export function unhandled(msg: never): void {
  void msg;
}

export type Response =
  { type: 'response'; requestId: number; ok: true; result: string } | { type: 'response'; requestId: number; ok: false; error: string };

export type RequestMessage = Extract<FromWebview, { requestId: number }>;

/**
 * The webview side of request/response: hands out ids and settles the promise when the matching
 * `response` arrives. Unanswered requests are rejected on `dispose()` (the panel closed).
 */
export class RequestTracker {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: string): void; reject(e: Error): void }>();

  request<M extends RequestMessage>(send: (msg: M) => void, build: (requestId: number) => M): Promise<string> {
    const requestId = this.nextId++;
    const p = new Promise<string>((resolve, reject) => this.pending.set(requestId, { resolve, reject }));
    send(build(requestId));
    return p;
  }

  /** Returns false when the response matches no request (late, duplicated or foreign). */
  settle(msg: Response): boolean {
    const waiter = this.pending.get(msg.requestId);
    if (!waiter) return false;
    this.pending.delete(msg.requestId);
    if (msg.ok) waiter.resolve(msg.result);
    else waiter.reject(new Error(msg.error));
    return true;
  }

  get outstanding(): number {
    return this.pending.size;
  }

  dispose(): void {
    for (const w of this.pending.values()) w.reject(new Error('the panel was closed before the host answered'));
    this.pending.clear();
  }
}

/** Encode hits column-oriented; strings, arg-name lists and sites are interned once per batch. */
export function encodeHits(hits: readonly Hit[]): HitBatch {
  const table = new Interner();
  const strings = table.strings;
  const intern = (s: string): number => table.id(s);
  const shapes: number[][] = [];
  const shapeKeys = new Interner();
  const sites: Site[] = [];
  // The session hands every hit of one event the same site object, so identity collapses them.
  const siteIds = new Map<Site, number>();
  // Likewise its notes: keyed by the identity of the unavailable map, then of the inferred list, then of the cut list.
  const notes: HitNotes[] = [];
  const noteIds = new Map<object | undefined, Map<object | undefined, Map<object | undefined, number>>>();
  const n = hits.length;
  const b: HitBatch = {
    n,
    strings,
    shapes,
    sites,
    ts: new Float64Array(n),
    host: new Int32Array(n),
    probe: new Int32Array(n),
    event: new Int32Array(n),
    kind: new Int32Array(n),
    pid: new Int32Array(n),
    tid: new Int32Array(n),
    comm: new Int32Array(n),
    cpu: new Int32Array(n),
    shape: new Int32Array(n),
    args: [],
    retval: new Array<HitValue | undefined>(n),
    hasRetval: new Uint8Array(n),
    latencyNs: new Float64Array(n),
    site: new Int32Array(n),
    notes,
    note: new Int32Array(n),
  };
  for (let i = 0; i < n; i++) {
    const h = hits[i];
    const names = Object.keys(h.args);
    // The same probe yields the same arg names, so a key of the joined names collapses shapes cheaply.
    const key = names.join('\u0000');
    const shape = shapeKeys.id(key);
    if (shape === shapes.length) shapes.push(names.map(intern));
    b.ts[i] = h.ts;
    b.host[i] = intern(h.host);
    b.probe[i] = intern(h.probe);
    b.event[i] = intern(h.event);
    b.kind[i] = Math.max(0, PROBE_KINDS.indexOf(h.kind));
    b.pid[i] = h.pid;
    b.tid[i] = h.tid;
    b.comm[i] = intern(h.comm);
    b.cpu[i] = h.cpu;
    b.shape[i] = shape;
    for (const name of names) b.args.push(h.args[name]);
    b.retval[i] = h.retval;
    b.hasRetval[i] = h.retval === undefined ? 0 : 1;
    b.latencyNs[i] = h.latencyNs ?? -1;
    let site = -1;
    if (h.site) {
      site = siteIds.get(h.site) ?? -1;
      if (site < 0) {
        site = sites.length;
        sites.push(h.site);
        siteIds.set(h.site, site);
      }
    }
    b.site[i] = site;
    let note = -1;
    if (h.unavailable || h.inferred || h.cut) {
      let byInferred = noteIds.get(h.unavailable);
      if (!byInferred) noteIds.set(h.unavailable, (byInferred = new Map()));
      let byCut = byInferred.get(h.inferred);
      if (!byCut) byInferred.set(h.inferred, (byCut = new Map()));
      note = byCut.get(h.cut) ?? -1;
      if (note < 0) {
        note = notes.length;
        const n: HitNotes = {};
        if (h.unavailable) n.unavailable = h.unavailable;
        if (h.inferred) n.inferred = h.inferred;
        if (h.cut) n.cut = h.cut;
        notes.push(n);
        byCut.set(h.cut, note);
      }
    }
    b.note[i] = note;
  }
  return b;
}

/** Visit each row of a batch without building objects (the webview's hot path). */
export function forEachHitRow(b: HitBatch, visit: (row: number, argNames: readonly number[], argOffset: number) => void): void {
  let off = 0;
  for (let i = 0; i < b.n; i++) {
    const names = b.shapes[b.shape[i]];
    visit(i, names, off);
    off += names.length;
  }
}

/** Row `row` of a batch as a hit (its arguments start at `argOffset` in `b.args`). */
export function hitAt(b: HitBatch, row: number, argOffset: number): Hit {
  const names = b.shapes[b.shape[row]];
  const args: Record<string, HitValue> = nameRecord();
  for (let k = 0; k < names.length; k++) args[b.strings[names[k]]] = b.args[argOffset + k];
  const hit: Hit = {
    host: b.strings[b.host[row]],
    probe: b.strings[b.probe[row]],
    kind: PROBE_KINDS[b.kind[row]] ?? 'entry',
    pid: b.pid[row],
    tid: b.tid[row],
    comm: b.strings[b.comm[row]],
    cpu: b.cpu[row],
    ts: b.ts[row],
    args,
    event: b.strings[b.event[row]],
  };
  if (b.hasRetval[row]) hit.retval = b.retval[row] ?? null;
  if (b.latencyNs[row] >= 0) hit.latencyNs = b.latencyNs[row];
  if (b.site[row] >= 0) hit.site = b.sites[b.site[row]];
  const note = b.note[row] >= 0 ? b.notes[b.note[row]] : undefined;
  if (note?.unavailable) hit.unavailable = note.unavailable;
  if (note?.inferred) hit.inferred = note.inferred;
  if (note?.cut) hit.cut = note.cut;
  return hit;
}

/** The inverse of encodeHits (the host's export, tests). */
export function decodeHits(b: HitBatch): Hit[] {
  const out: Hit[] = [];
  forEachHitRow(b, (i, _names, off) => out.push(hitAt(b, i, off)));
  return out;
}

export function emptyStats(): PanelStats {
  return { counts: nameRecord(), sites: nameRecord(), latency: nameRecord(), lost: 0, mismatch: 0, historyDropped: 0 };
}
