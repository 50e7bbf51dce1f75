// What the session makes of its probe points: which tracefs events they are, the parser's view of each event,
// the entry/return pairs for latency, and a record as users see it.
// Tests: test/unit/core/session/presentHit.test.ts, test/unit/core/session/fanout.test.ts, test/unit/core/session/sameFigures.test.ts, test/integration/returns.test.ts
import type { CompiledProbe } from '../probes/compiler';
import type { EventSchema, Hit, HitValue } from '../tracefs/hitParser';
import type { LatencyPair } from './aggregates';
import { internCut, stringHead } from './cutStrings';
import { GOROUTINE_ARG } from '../../shared/site';
import { nameRecord } from '../../shared/names';

/** What one probe is: a spec's events in one function (all of its sites). */
export const probeKey = (p: Pick<CompiledProbe, 'spec' | 'function'>) => `${p.spec}\0${p.function ?? ''}`;

/** The tracefs events of `probes` (points of one event are listed once), in order. */
export const eventsOf = (probes: readonly CompiledProbe[]): string[] => [...new Set(probes.map((p) => p.definition.event))];

/** The parser's view of `p`'s tracefs event (its points fetch the same names and types). */
export function schemaOf(p: CompiledProbe, probe: string): EventSchema {
  const retval = p.kind === 'return' ? p.args.find((a) => a.fetch === '$retval' || a.name === 'retval') : undefined;
  return {
    event: p.definition.event,
    probe,
    kind: p.kind,
    args: p.args.map((a) => ({ name: a.name, type: a.type })),
    retvalArg: retval?.name,
  };
}

export function pairsOf(probes: CompiledProbe[]): LatencyPair[] {
  const byKey = new Map<string, { entry?: string; exits: string[]; by?: string }>();
  for (const p of probes) {
    if (!p.pairKey) continue;
    const e = byKey.get(p.pairKey) ?? { exits: [] };
    if (p.kind === 'entry') e.entry = p.event;
    else if (p.kind === 'return') e.exits.push(p.event);
    if (p.pairBy === 'goroutine') e.by = GOROUTINE_ARG;
    byKey.set(p.pairKey, e);
  }
  const out: LatencyPair[] = [];
  for (const e of byKey.values()) if (e.entry && e.exits.length) out.push({ entry: e.entry, exit: e.exits, by: e.by });
  return out;
}

const probeNotes = new WeakMap<CompiledProbe, Pick<Hit, 'unavailable' | 'inferred'>>();

/** What every hit of a probe says about its arguments (unavailable here, inferred), built once per probe. */
function notesOf(probe: CompiledProbe): Pick<Hit, 'unavailable' | 'inferred'> {
  let n = probeNotes.get(probe);
  if (!n) {
    n = {};
    if (probe.unavailable?.length) n.unavailable = nameRecord(probe.unavailable.map((u) => [u.name, u.reason]));
    const inferred = probe.args.filter((a) => a.inferred && !a.hidden).map((a) => a.name);
    if (inferred.length) n.inferred = inferred;
    probeNotes.set(probe, n);
  }
  return n;
}

/**
 * A record as users see it: Go strings cut at their length, long strings shown by their beginning (marked cut),
 * signed bitfields sign-extended, ProbeLens's hidden arguments dropped, named by its probe and its point.
 */
export function presentHit(hit: Hit, probe: CompiledProbe | undefined, probeName?: string): Hit {
  if (!probe) return hit;
  const args: Record<string, HitValue> = nameRecord();
  let cut: string[] | undefined;
  for (const a of probe.args) {
    if (a.hidden) continue;
    let v = hit.args[a.name];
    if (a.lengthArg && Array.isArray(v)) {
      // A Go string: a byte preview and its length (see GO_STRING_PREVIEW in the compiler).
      const len = hit.args[a.lengthArg];
      const bytes = Buffer.from(v.map((b) => Number(b) & 0xff));
      if (typeof len === 'number' && len >= 0) {
        v = bytes.subarray(0, Math.min(len, bytes.length)).toString('utf8');
        // Longer than the preview: its beginning, marked cut (never text with a '…' the string does not hold).
        if (len > bytes.length) (cut ??= []).push(a.name);
      }
    }
    if (a.headArg) {
      // A string of 4,096 bytes or more: the kernel records a fault, or (when the record holds other strings)
      // a few bytes sized by those. Its head words hold no NUL, so it is at least that long: a shorter value is
      // wrong, and its beginning is shown from the words, marked cut.
      const head = stringHead(hit.args[a.headArg]);
      if (head !== undefined && (typeof v !== 'string' || Buffer.byteLength(v) < Buffer.byteLength(head) || !v.startsWith(head))) {
        v = head;
        (cut ??= []).push(a.name);
      }
    }
    const bits = a.type.charCodeAt(0) === 98 /* b */ ? /^b([0-9]+)@/.exec(a.type) : null;
    if (bits && a.display === 'signed' && typeof v === 'number') {
      const w = Number(bits[1]);
      if (w < 53 && v >= 2 ** (w - 1)) v -= 2 ** w;
    }
    if (v !== undefined && !(hit.kind === 'return' && a.fetch === '$retval')) args[a.name] = v;
  }
  const comm = hit.args.probelens_comm;
  // A hit names its probe and its point (its site's own name), whichever tracefs event carried it.
  // Field by field, not by spreading the hit: a spread copies generically, and was this function's main cost.
  const out: Hit = {
    host: hit.host,
    probe: probeName ?? probe.event,
    kind: hit.kind,
    pid: hit.pid,
    tid: hit.tid,
    comm: typeof comm === 'string' && comm ? comm : hit.comm,
    cpu: hit.cpu,
    ts: hit.ts,
    args,
    event: probe.event,
  };
  if (hit.nsPid !== undefined) out.nsPid = hit.nsPid;
  if (hit.retval !== undefined) out.retval = hit.retval;
  if (hit.latencyNs !== undefined) out.latencyNs = hit.latencyNs;
  if (hit.site !== undefined) out.site = hit.site;
  if (hit.caller !== undefined) out.caller = hit.caller;
  if (hit.unavailable !== undefined) out.unavailable = hit.unavailable;
  if (hit.inferred !== undefined) out.inferred = hit.inferred;
  if (hit.cut !== undefined) out.cut = hit.cut;
  if (probe.site) out.site = probe.site;
  const n = notesOf(probe);
  if (n.unavailable) out.unavailable = n.unavailable;
  if (n.inferred) out.inferred = n.inferred;
  if (cut) out.cut = internCut(probe, cut);
  return out;
}
