// The editor's side of counting in the kernel: "Aggregate in the Kernel" / "Stream Hits" on a probe (the Probes
// view's context menu hands its node; from the palette a probe is picked), and the offer: about once a second each
// streaming session is looked at, and a probe whose hits are being lost, or that fires faster than the stream
// carries (model/aggregateOffer.ts decides), is named once in a notification whose action counts it in the kernel
// — offered only where the target's kernel has hist triggers; elsewhere the notification says so and suggests
// narrowing the probe.
// Tests: test/e2e/aggregateToggle.test.ts, test/unit/vscode/model/aggregateOffer.test.ts
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { TraceSession } from '../core/session/traceSession';
import { registerCommand, type ProbeNodeArg } from './commands';
import type { Ctx } from './ctx';
import { OfferedOnce, offerText, pressure, type StreamSample } from './model/aggregateOffer';
import { statsForSpec } from './model/stats';
import { viewOf } from './run';
import type { Tracing } from './tracing';
import { nameRecord } from '../shared/names';

const AGGREGATE = 'Aggregate in the Kernel';

export function registerAggregation(ctx: Ctx, tracing: Tracing): void {
  const toggle = (on: boolean) => async (n?: ProbeNodeArg) => {
    const probe = n ?? (await pickProbe(tracing, on));
    if (probe) await tracing.setAggregate(probe.binaryKey, probe.spec, on);
  };
  ctx.push(registerCommand('probelens.aggregateProbe', toggle(true)));
  ctx.push(registerCommand('probelens.streamProbe', toggle(false)));

  const offered = new OfferedOnce();
  const samples = new WeakMap<TraceSession, StreamSample>();
  const look = () => {
    if (!tracing.isTracing) return;
    for (const r of tracing.allRuns()) {
      const s = r.session;
      if (r.aggSpec !== undefined || !s || s.state !== 'armed') continue;
      const view = viewOf(r, s);
      const hits: Record<string, number> = nameRecord();
      for (const spec of new Set(view.events.map((e) => e.spec))) hits[spec] = statsForSpec(spec, [view], 0).hits;
      const now: StreamSample = { t: Date.now(), lost: view.snapshot.lost, hits };
      const prev = samples.get(s);
      samples.set(s, now);
      for (const p of pressure(prev, now)) {
        const said = offerText(p, r.target.label, s.canAggregate);
        if (!said || !offered.first(r.binaryKey, p.spec)) continue;
        const { message, offer } = said;
        ctx.log(message);
        if (!offer) void vscode.window.showWarningMessage(`ProbeLens: ${message}`);
        else
          void vscode.window.showWarningMessage(`ProbeLens: ${message}`, AGGREGATE).then((c) => {
            if (c === AGGREGATE) void tracing.setAggregate(r.binaryKey, p.spec, true);
          });
      }
    }
  };
  const timer = setInterval(look, 1000);
  ctx.push({ dispose: () => clearInterval(timer) });
}

/** The probes that could be flipped, to pick one from the palette. */
async function pickProbe(tracing: Tracing, on: boolean): Promise<ProbeNodeArg | undefined> {
  const items = Object.entries(tracing.set.binaries).flatMap(([binaryKey, list]) =>
    list
      .filter((e) => !!e.aggregate !== on)
      .map((e) => ({ label: e.spec, description: basename(binaryKey), probe: { kind: 'probe' as const, binaryKey, spec: e.spec } })),
  );
  if (!items.length) {
    void vscode.window.showInformationMessage(`ProbeLens: no probe ${on ? 'streams' : 'is counted in the kernel'} now.`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(items, {
    placeHolder: on ? 'count this probe in the kernel (hist triggers)' : 'stream every hit of this probe again',
  });
  return picked?.probe;
}
