// Engine hits in the live panel's protocol shape: the protocol carries numbers and strings only, so a
// missing value (null) and array values (u8[4] fetches) travel as their text.
import type { Hit, HitValue } from '../../core/tracefs/hitParser';
import type { ArgValue, PanelHit } from '../../shared/protocol';

function argValue(v: HitValue): ArgValue {
  if (typeof v === 'number' || typeof v === 'string') return v;
  return v === null ? 'null' : JSON.stringify(v);
}

export function toPanelHit(h: Hit): PanelHit {
  const args: Record<string, ArgValue> = {};
  for (const [k, v] of Object.entries(h.args)) args[k] = argValue(v);
  const out: PanelHit = { host: h.host, probe: h.probe, kind: h.kind, pid: h.pid, tid: h.tid, comm: h.comm, cpu: h.cpu, ts: h.ts, args };
  if (h.retval !== undefined) out.retval = argValue(h.retval);
  return out;
}
