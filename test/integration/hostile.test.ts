// A traced program cannot hide, forge or alter hits: the `hostile` fixture renames itself to names holding \r,
// U+2028, U+2029 and \n and passes strings shaped like trace_pipe's own lines (records of pid 1 with guessed
// framing values, LOST lines, argument impersonations) through the whole engine on the real tracefs, on both
// streams: ring-buffer pages (whose lengths are explicit) and trace_pipe text (framed by a secret).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadIndex } from '../../src/core/index/load';
import { TraceSession, type SessionSummary } from '../../src/core/session/traceSession';
import { LocalTarget } from '../../src/core/target/local';
import type { Hit } from '../../src/core/tracefs/hitParser';
import { fixtureOrSkip, runFixture, type FixtureOutput } from '../helpers/fixtures';
import { missing } from '../helpers/require';
import { isolatedEnv, privateCopy, startCli } from './engine-harness';
import { requireTracefs } from '../helpers/tracefs';
import { plainData } from '../helpers/plain';

const text = (hex: string) => Buffer.from(hex, 'hex').toString('utf8');

/**
 * The hostile fixture and a private copy of it (a uprobe sits on the file's inode, so only this test's runs hit
 * it), where the kernel can carry `stream`; undefined after marking the test skipped (failed under CI) otherwise.
 */
async function hostileCopy(t: TestContext, stream: 'raw' | 'text') {
  const tracefs = requireTracefs(t);
  if (!tracefs) return undefined;
  if (stream === 'text' && !readFileSync(join(tracefs, 'README'), 'utf8').includes('\\imm-value')) {
    missing(t, 'this kernel has no immediate fetchargs (\\imm, Linux 5.4+): records cannot be framed by a secret');
    return undefined;
  }
  const f = await fixtureOrSkip(t, 'hostile');
  return f && { f, bin: privateCopy(t, f.path) };
}

for (const stream of ['raw', 'text'] as const)
  test(`${stream} stream: a program with \\r, U+2028, U+2029 and \\n in its comm and record-, LOST- and argument-shaped strings yields exactly its own calls`, async (t) => {
    const got = await hostileCopy(t, stream);
    if (!got) return;
    const { f, bin } = got;
    const { index } = await loadIndex(bin, { noCache: true });
    const hits: Hit[] = [];
    const session = await TraceSession.start({
      target: new LocalTarget(),
      index,
      specs: ['handle_req path uid name'],
      stream,
      onHit: (h) => hits.push(h),
    });
    assert.equal(session.stream, stream);
    let out: FixtureOutput;
    let summary: SessionSummary;
    try {
      out = await runFixture({ ...f, path: bin }, ['3']);
    } finally {
      // STOP drains the stream: every record the kernel wrote has been read when the summary comes.
      summary = await session.stop();
    }
    const calls = out.calls.filter((c) => c.func === 'handle_req');
    assert.equal(calls.length, 21);
    assert.equal(out.counts.get('handle_req'), 21);
    t.diagnostic(`summary ${JSON.stringify(summary)}`);
    assert.equal(summary.stream, stream);

    const own = hits.filter((h) => h.probe === 'handle_req').sort((a, b) => a.ts - b.ts);
    assert.deepEqual(
      plainData(own.map((h) => ({ pid: h.pid, tid: h.tid, comm: h.comm, args: h.args }))),
      calls.map((c) => ({
        pid: out.pid,
        tid: out.pid,
        comm: text(c.args.comm),
        args: { path: text(c.args.path), uid: Number(c.args.uid), name: text(c.args.name) },
      })),
    );
    assert.equal(hits.length, own.length, 'no hit of another probe or pid');
    assert.equal(summary.lost, 0);
    assert.equal(summary.kernelHits.handle_req, 21);
    assert.equal(summary.hits.handle_req + summary.lost, summary.kernelHits.handle_req, 'received + lost = kernelHits');
    assert.equal(summary.mismatch, 0);
    assert.equal(session.mismatch, 0, 'what the panel shows for the stopped session');
    assert.equal(summary.loss?.unaccounted, 0);
  });

for (const stream of ['raw', 'text'] as const)
  test(`${stream} stream: probelens trace on the hostile program: every call counted, nothing missing or lost`, async (t) => {
    const got = await hostileCopy(t, stream);
    if (!got) return;
    const { f, bin } = got;
    const cli = startCli(t, ['trace', bin, 'handle_req path uid name'], { ...isolatedEnv(t), PROBELENS_STREAM: stream });
    await cli.waitFor(/Ctrl-C to stop/, 120_000);
    const out = await runFixture({ ...f, path: bin }, ['3']);
    assert.equal(out.counts.get('handle_req'), 21);
    cli.child.kill('SIGINT');
    const { code } = await cli.exit;
    assert.equal(code, 0, cli.stderr());
    assert.match(cli.stdout(), /^handle_req: 21 hits \(kernel counted 21\)$/m);
    assert.doesNotMatch(cli.stdout(), /^(lost|\S+: mismatch):/m);
    assert.match(
      cli.stderr(),
      stream === 'raw' ? /^probelens: local: streaming ring-buffer pages/m : /^probelens: local: streaming trace_pipe text/m,
    );
  });
