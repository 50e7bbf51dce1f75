// Never a wrong value as true: a string argument the kernel cannot read whole (4,096 bytes or more) is shown by
// its first bytes and marked cut, never as the few bytes the kernel's record holds; one whose record the kernel
// cannot store (a few bytes under 4,096) is not shown at all but counted, and the summary says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtureOrSkip, runFixture } from '../helpers/fixtures';
import { requireTracefs } from '../helpers/tracefs';
import { isolatedEnv, privateCopy, startCli, sleep } from './engine-harness';

const ARM_MS = 120_000;
const letters = (n: number) => Array.from({ length: n }, (_, k) => String.fromCharCode(97 + (k % 26))).join('');

test(
  'strings of 5,000 and 4,096 bytes are shown cut with their first 64 bytes; 4,050–4,090 bytes are counted, never shown wrong',
  { timeout: 240_000 },
  async (t) => {
    if (!requireTracefs(t)) return;
    const f = await fixtureOrSkip(t, 'longstr');
    if (!f) return;
    const bin = privateCopy(t, f.path);
    const cli = startCli(t, ['trace', bin, 'take_str s len'], isolatedEnv(t));
    await cli.waitFor(/tracing 1 probe at \d+ sites? on /, ARM_MS);
    const lengths = [10, 3000, 4050, 4070, 4090, 4095, 4096, 5000];
    const out = await runFixture({ ...f, path: bin }, lengths.map(String));
    assert.equal(out.counts.get('take_str'), lengths.length);
    // The stream lags the program: wait for the last call's line (or give up after a bound), then stop.
    const deadline = Date.now() + 60_000;
    while (!/ len=5000\b/.test(cli.stdout()) && Date.now() < deadline) await sleep(100);
    cli.child.kill('SIGINT');
    const { code } = await cli.exit;
    const lines = cli
      .stdout()
      .split('\n')
      .filter((l) => / take_str /.test(l));
    t.diagnostic(lines.map((l) => l.replace(/(abcdefghijklmnopqrstuvwxyz){3,}/g, '<letters>')).join('\n'));
    const byLen = new Map<number, string>();
    for (const l of lines) byLen.set(Number(/ len=(\d+)/.exec(l)![1]), l);

    assert.match(byLen.get(10) ?? '', / s="abcdefghij" len=10$/, 'a short string whole, not marked');
    assert.match(byLen.get(3000) ?? '', new RegExp(` s="${letters(3000)}" len=3000$`));
    for (const n of [4096, 5000]) {
      const l = byLen.get(n);
      assert.ok(l, `the call with a ${n}-byte string is shown`);
      assert.match(l, new RegExp(` s="${letters(64)}"…\\(cut\\) len=${n}$`), `${n} bytes: the first 64, marked cut`);
    }
    // Between 4,050 and 4,095 bytes the record outgrows what the kernel can store: the hit never arrives. Any that
    // does is whole or marked cut, never a short value shown as complete.
    for (const n of [4050, 4070, 4090, 4095]) {
      const l = byLen.get(n);
      if (l) assert.match(l, new RegExp(` s="${letters(64)}[a-z]*"(?:…\\(cut\\))? len=${n}$`));
    }
    const missingCalls = lengths.filter((n) => !byLen.has(n)).length;
    const err = cli.stderr();
    if (missingCalls > 0) {
      assert.match(cli.stdout(), new RegExp(`mismatch: ${missingCalls} events? the kernel counted`), 'the missing calls are counted');
      assert.match(cli.stdout(), /string argument/, 'and the summary says why');
    }
    assert.equal(code, 0, err);
  },
);
