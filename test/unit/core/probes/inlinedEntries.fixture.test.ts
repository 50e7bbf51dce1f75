// Entries of inlined copies in real GCC code (the entries fixture, see entries.c): each case GCC produces there is
// checked on its decoded control flow first, so a compiler that stops producing it fails here, not silently.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AT } from '../../../../src/core/dwarf/constants';
import { callSitesIn, integerArguments } from '../../../../src/core/dwarf/callSites';
import { loadIndex } from '../../../../src/core/index/load';
import { provedEntrySites } from '../../../../src/core/probes/entrySites';
import { siteContext } from '../../../../src/core/probes/variables';
import { decodeX86Flow } from '../../../../src/core/probes/x86decoder';
import type { FunctionSite } from '../../../../src/core/index/model';
import { fixtureOrSkip } from '../../../helpers/fixtures';

const hex = (a: bigint) => `0x${a.toString(16)}`;

async function load(t: Parameters<typeof fixtureOrSkip>[0]) {
  const f = await fixtureOrSkip(t, 'entries');
  if (!f) return undefined;
  const { index } = await loadIndex(f.path, { noCache: true });
  const ctx = await siteContext(index);
  const fn = (name: string) => index.functions().find((x) => x.name === name)!;
  /** The holder's instructions, decoded from its symbol. */
  const code = (holder: string) => {
    const h = fn(holder);
    const bytes = ctx.access.image.functionBytes({ address: h.address!, size: BigInt(h.size) });
    return decodeX86Flow(bytes, h.address!).flatMap((i) => ('invalid' in i ? [] : [i]));
  };
  const inHolder = (s: FunctionSite, holder: string) => s.caller === holder;
  return { index, fn, code, inHolder };
}

const flatRanges = (s: FunctionSite): Array<[bigint, bigint]> => {
  const out: Array<[bigint, bigint]> = [];
  for (let i = 0; i + 1 < (s.ranges ?? []).length; i += 2) out.push([BigInt(s.ranges![i]), BigInt(s.ranges![i + 1])]);
  return out;
};

test('a tail-duplicated copy: DWARF gives one entry pc on one path; the other path gets its own entry', async (t) => {
  const l = await load(t);
  if (!l) return;
  const f = l.fn('duplicated');
  const copies = f.sites.filter((s) => s.kind === 'inlined');
  assert.equal(copies.length, 1, 'one DIE for both paths');
  const [c] = copies;
  // The case itself: the copy's ranges hold two runs of its code, each ending in its own RET path, and the
  // caller's test branches to both; the entry pc is in the first run only.
  const insns = l.code('drive_dup');
  const inCopy = (a: bigint) => flatRanges(c).some(([lo, hi]) => a >= lo && a < hi);
  const rets = insns.filter((i) => i.kind === 'ret');
  assert.equal(rets.length, 2, 'two paths, each with its own return');
  const branch = insns.find((i) => i.kind === 'jcc')!;
  assert.ok(branch.target! > c.address && !inCopy(branch.target!), 'the test jumps past the first run');
  const second = insns.find((i) => i.address > branch.target! && inCopy(i.address))!;
  assert.ok(second, 'the second path runs copy code too');

  const proved = await provedEntrySites(l.index, f, f.sites);
  assert.deepEqual(
    proved.sites.map((s) => hex(s.address)),
    [hex(c.address), hex(second.address)],
  );
  assert.equal(proved.lowerBound, false, proved.notes.join('; '));
});

test('two calls merged into one DIE computed ahead of the branch: the path without an entry pc is named, the count a lower bound', async (t) => {
  const l = await load(t);
  if (!l) return;
  const f = l.fn('merged');
  const copies = f.sites.filter((s) => s.kind === 'inlined');
  assert.equal(copies.length, 1, 'the second call has no DIE of its own');
  const [c] = copies;
  const insns = l.code(c.caller!);
  const inCopy = (a: bigint) => flatRanges(c).some(([lo, hi]) => a >= lo && a < hi);
  // The case itself: the copy's head runs before the caller's test, on both paths; its entry pc is on one.
  const branch = insns.find((i) => i.kind === 'jcc')!;
  assert.ok(inCopy(insns[0].address) && branch.address < c.address, 'copy code computed ahead of the test');
  assert.ok(!inCopy(branch.target!) && c.address < branch.target!, 'the other path holds no code of the copy');
  const proved = await provedEntrySites(l.index, f, f.sites);
  assert.deepEqual(
    proved.sites.map((s) => hex(s.address)),
    [hex(c.address)],
  );
  assert.equal(proved.lowerBound, true);
  assert.match(
    proved.notes.join('\n'),
    new RegExp(`may miss calls: its code at ${hex(insns[0].address)} also runs on a path that passes no entry`),
  );
});

test("a copy whose entry pc is a jmp to another copy's entry is one call with it: armed once", async (t) => {
  const l = await load(t);
  if (!l) return;
  const f = l.fn('chained');
  const copies = f.sites.filter((s) => s.kind === 'inlined');
  assert.equal(copies.length, 2);
  const holder = copies[0].caller!;
  const insns = l.code(holder);
  const [a, b] = [...copies].sort((x, y) => (x.address < y.address ? -1 : 1));
  const jump = insns.find((i) => i.address === a.address)!;
  assert.equal(jump.kind, 'jmp', 'the first entry pc is a jmp');
  assert.equal(jump.target, b.address, "…to the second copy's entry pc");
  const proved = await provedEntrySites(l.index, f, f.sites);
  assert.deepEqual(
    proved.sites.map((s) => hex(s.address)),
    [hex(b.address)],
  );
  assert.match(proved.notes.join('\n'), /armed once with .*runs into the other with no call between/);
  assert.equal(proved.lowerBound, false);
});

test("a call's argument registers come from its DWARF call site's prototype: none known for a varargs callee", async (t) => {
  const f = await fixtureOrSkip(t, 'entries');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  const dw = (await siteContext(index)).access.dwarf;
  const fn = (name: string) => index.functions().find((x) => x.name === name)!;
  const named = (holder: string) =>
    [...callSitesIn(dw, fn(holder).dieOffset)].map(([ret, origin]) => {
      const d = dw.dieAt(origin);
      return { ret, name: d.unit.str(d, AT.name), args: integerArguments(dw, origin) };
    });
  // drive_chain calls note_odd(int) and note_even(int) (noipa: real calls), each returning to its own address.
  const chain = named('drive_chain');
  assert.deepEqual(
    chain
      .filter((c) => c.name?.startsWith('note_'))
      .map((c) => `${c.name}:${c.args}`)
      .sort(),
    ['note_even:1', 'note_odd:1'],
  );
  const code = index.functions().find((x) => x.name === 'drive_chain')!;
  for (const c of chain)
    assert.ok(BigInt(c.ret) > code.address! && BigInt(c.ret) <= code.address! + BigInt(code.size), 'a return address inside the holder');
  // main's printf calls (GCC may call __printf_chk): `...`, so any argument register may be read.
  const prints = named('main').filter((c) => /printf/.test(c.name ?? ''));
  assert.ok(prints.length >= 4, `main's printf calls: ${JSON.stringify(named('main').map((c) => c.name))}`);
  for (const p of prints) assert.equal(p.args, undefined, `${p.name}`);
});
