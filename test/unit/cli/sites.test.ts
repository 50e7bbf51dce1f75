// The CLI on a function with several sites: `functions --json` lists them, `define` arms them as the probe points
// of one event, --max-sites guards against arming many where each is an event, --disable-site leaves one out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fixtureOrSkip } from '../../helpers/fixtures';
import { compileProbes, TooManySitesError } from '../../../src/core/probes/compiler';
import { loadIndex } from '../../../src/core/index/load';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const cache = mkdtempSync(join(tmpdir(), 'probelens-cli-cache-'));

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: cache },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

interface JsonSite {
  kind: string;
  address: string;
  fileOffset: string | null;
  caller: string | null;
  file: string | null;
  line: number | null;
  symbol: string | null;
}

test('functions --json: sites with their kinds, addresses as 0x…, callers and call sites of inlined copies', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const r = cli('functions', f.path, '--match', 'part_ext', '--json');
  assert.equal(r.code, 0, r.err);
  const [fn] = JSON.parse(r.out) as Array<{ name: string; address: string; sites: JsonSite[] }>;
  assert.deepEqual(
    fn.sites.map((s) => s.kind),
    ['entry', 'part', 'inlined', 'inlined'],
  );
  assert.equal(fn.sites[0].address, fn.address);
  assert.equal(fn.sites[1].symbol, 'part_ext.part.0');
  for (const s of fn.sites) assert.match(s.address, /^0x[0-9a-f]+$/);
  for (const s of fn.sites.slice(2)) {
    assert.match(s.caller ?? '', /^drive_ext_[ab]$/);
    assert.ok(s.file?.endsWith('/sites.c') && s.line !== null);
  }
});

test("define: a function's sites are the probe points of one event, each naming itself; --max-sites applies only where sites are events of their own; --disable-site", async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const all = cli('define', f.path, 'part_ext', '--json');
  assert.equal(all.code, 0, all.err);
  const defs = JSON.parse(all.out) as Array<{ event: string; definition: string }>;
  // entry + two inlined heads; the .part is reached only through those (see docs/cli.md).
  assert.equal(defs.length, 3);
  assert.equal(new Set(defs.map((d) => d.event)).size, 3, 'each point has its own name, which its hits carry');
  for (const d of defs) assert.ok(d.event.length <= 63);
  // One tracefs event (named after the entry site), every point numbered by an immediate.
  assert.deepEqual(
    defs.map((d) => /^p:\S+\/(\S+) /.exec(d.definition)?.[1]),
    ['part_ext', 'part_ext', 'part_ext'],
  );
  assert.deepEqual(
    defs.map((d) => / probelens_site=\\([0-9]+):u32/.exec(d.definition)?.[1]),
    ['0', '1', '2'],
  );
  // Teardown no longer grows with the sites: no limit to raise.
  const capped = cli('define', f.path, 'part_ext', '--max-sites', '2');
  assert.equal(capped.code, 0, capped.err);
  assert.equal(capped.out.trim().split('\n').length, 3);

  const listed = JSON.parse(cli('functions', f.path, '--match', 'part_ext', '--json').out) as Array<{ sites: JsonSite[] }>;
  const inlined = listed[0].sites.find((s) => s.kind === 'inlined')!;
  const fewer = cli('define', f.path, 'part_ext', '--json', '--disable-site', inlined.address);
  assert.equal(fewer.code, 0, fewer.err);
  assert.equal((JSON.parse(fewer.out) as unknown[]).length, 2);
  const bad = cli('define', f.path, 'part_ext', '--disable-site', 'part_ext');
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--disable-site takes a site address/);
});

test('without immediates (kernels before 5.4) each site is an event of its own, and --max-sites refuses more with the teardown cost', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const { index } = await loadIndex(f.path, { noCache: true });
  const probes = await compileProbes(['part_ext'], index, { immediates: false });
  assert.equal(probes.length, 3);
  assert.deepEqual(
    probes.map((p) => p.definition.event),
    probes.map((p) => p.event),
  );
  assert.ok(probes.every((p) => p.siteId === undefined && !p.definition.args.some((a) => a.name === 'probelens_site')));
  await assert.rejects(
    compileProbes(['part_ext'], index, { immediates: false, maxSites: 2 }),
    (e: Error) => e instanceof TooManySitesError && /would arm 3 sites \(more than 2\).*about 135 ms.*--max-sites 3/.test(e.message),
  );
});

test('define: same-name statics are all armed; NAME@FILE narrows to one', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const both = cli('define', f.path, 'same_name x', '--json');
  assert.equal(both.code, 0, both.err);
  assert.equal((JSON.parse(both.out) as unknown[]).length, 2);
  const one = cli('define', f.path, 'same_name@sites_other.c x', '--json');
  assert.equal((JSON.parse(one.out) as unknown[]).length, 1);
});

test('define: a return probe arms out-of-line sites and the exits of inlined copies, and names copies it cannot see', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  const both = cli('define', f.path, 'both_fn%return $retval', '--json');
  assert.equal(both.code, 0, both.err);
  const defs = JSON.parse(both.out) as Array<{ event: string; definition: string }>;
  assert.deepEqual(
    defs.map((d) => [d.definition.slice(0, 2), d.event.replace(/_[0-9a-f]+_/, '_ADDR_'), /retval=/.test(d.definition)]),
    [
      ['r:', 'both_fn_return', true],
      ['p:', 'both_fn_inlined_ADDR_return', false],
    ],
  );
  assert.match(both.err, /retval unavailable at inlined into main at \S*sites\.c:\d+ \(0x[0-9a-f]+\): the return value cannot be fetched/);
  // Only inlined copies: each copy's exit is a plain probe.
  const inl = cli('define', f.path, 'inl_fn%return', '--json');
  assert.equal(inl.code, 0, inl.err);
  const inlDefs = JSON.parse(inl.out) as Array<{ event: string; definition: string }>;
  assert.equal(inlDefs.length, 2);
  // Each exit is a point of one event named after the probe; the point names its copy.
  for (const d of inlDefs) assert.match(d.definition, /^p:\S+\/inl_fn_return \S+ .* probelens_site=\\[01]:u32$/);
  for (const d of inlDefs) assert.match(d.event, /^inl_fn_inlined_[0-9a-f]+_return$/);
  // GCC put both copies' entry after their code: never a guess, the warning says which and why.
  const alias = cli('define', f.path, 'alias_name%return', '--json');
  assert.equal(alias.code, 0, alias.err);
  assert.equal((JSON.parse(alias.out) as unknown[]).length, 1);
  assert.match(
    alias.err,
    /returns are unavailable at 2 inlined copies, whose calls this return probe does not see \(inlined into main at .* \(0x[0-9a-f]+\): .*lies outside its own code/,
  );
});

test('define: a parameter DWARF gives as a constant is that constant, never a guess from the calling convention', async (t) => {
  const f = await fixtureOrSkip(t, 'sites');
  if (!f) return;
  // clone_fn(&b, 9): the .constprop clone has k as DW_AT_const_value 9 (and %si holds something else): the
  // probe fetches the constant as an immediate, typed as k's int.
  const r = cli('define', f.path, 'clone_fn k');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, / k=\\9:s32 /);
  assert.doesNotMatch(r.out, /%si/);
  // The clone receives b.a, not the pointer: p is unavailable there, and as it is nowhere else the spec is refused.
  const p = cli('define', f.path, 'clone_fn p');
  assert.notEqual(p.code, 0);
  assert.match(
    p.err,
    /'p' cannot be fetched at clone_fn \(sites\.c:87\) clone \(0x[0-9a-f]+\): this clone does not receive it \(GCC dropped or replaced the parameter/,
  );
});
