// probelens functions | lines | vars | usdt — what a binary offers to probe (docs/contracts.md, JSON).
// Tests: test/unit/cli/inspect.test.ts, test/unit/cli/hostile.test.ts, test/unit/cli/epipe.test.ts, test/unit/cli/kernelBtf.test.ts
import type { BinaryIndex } from '../../core/index/binaryIndex';
import { loadIndex } from '../../core/index/load';
import type { IndexedFunction } from '../../core/index/model';
import { hexAddress, jsonInteger, toJson } from '../../shared/hitJson';
import { resolvePoint, resolveSourceFile } from '../../core/probes/resolve';
import { parsePoint } from '../../core/probes/spec';
import { variablesAtSite } from '../../core/probes/variables';
import { globToRegExp } from '../../core/index/binaryIndex';
import { oneValue, parseArgs, UsageError, type ParsedArgs } from '../args';
import { indexOptions } from '../limits';
import { parseBtf, type Btf } from '../../core/binary/btf';
import { readFileSync } from 'node:fs';
import { nameRecord } from '../../shared/names';

const COMMON = { json: { kind: 'flag' }, 'no-cache': { kind: 'flag' }, 'debug-dir': { kind: 'value', repeat: true } } as const;

export interface Io {
  out(text: string): void;
  /** Settles when the reader of the output has gone (a closed pipe): long-running commands stop then. */
  closed?: Promise<void>;
}

async function indexFor(args: ParsedArgs): Promise<BinaryIndex> {
  const bin = args.positionals[0];
  if (!bin) throw new UsageError('missing BIN (the binary to inspect)');
  const { index } = await loadIndex(bin, {
    noCache: args.flags.has('no-cache'),
    debugDirs: args.values.get('debug-dir'),
    ...indexOptions(),
  });
  return index;
}

export function functionJson(f: IndexedFunction) {
  return {
    name: f.name,
    linkageName: f.linkageName ?? f.name,
    file: f.file ?? null,
    line: f.line ?? null,
    address: f.address !== undefined ? hexAddress(f.address) : null,
    fileOffset: f.fileOffset !== undefined ? hexAddress(f.fileOffset) : null,
    size: jsonInteger(f.size),
    params: f.params.map((p) => ({ name: p.name, type: p.type, location: p.location, ...(p.inferred ? { inferred: true } : {}) })),
    inlinedInstances: f.inlinedInstances,
    aliases: f.aliases ?? [],
    sites: f.sites.map((s) => ({
      kind: s.kind,
      address: hexAddress(s.address),
      fileOffset: s.fileOffset !== undefined ? hexAddress(s.fileOffset) : null,
      caller: s.caller ?? null,
      file: s.file ?? null,
      line: s.line ?? null,
      symbol: s.symbol ?? null,
    })),
    probeable: f.probeable,
    reason: f.reason ?? null,
  };
}

/** The order `functions` lists in: the default locale's, as localeCompare, at a collator's speed. */
const byName = new Intl.Collator();

/**
 * A JSON array written element by element, as JSON.stringify(items, null, 2) would print it whole: a kernel's
 * 148,000 functions never become one string.
 */
function writeJsonArray<T>(io: Io, items: readonly T[], row: (item: T) => unknown): void {
  if (items.length === 0) {
    io.out('[]\n');
    return;
  }
  io.out('[\n');
  items.forEach((item, i) => io.out(`  ${toJson(row(item), 2).replace(/\n/g, '\n  ')}${i + 1 < items.length ? ',' : ''}\n`));
  io.out(']\n');
}

export async function functionsCommand(argv: string[], io: Io): Promise<void> {
  const args = parseArgs(argv, nameRecord({ ...COMMON, match: { kind: 'value' }, btf: { kind: 'value' }, 'base-btf': { kind: 'value' } }));
  if (args.positionals.length > 1) throw new UsageError(`unexpected argument '${args.positionals[1]}'`);
  const glob = oneValue(args, 'match');
  const re = glob ? globToRegExp(glob) : undefined;
  const btfFile = oneValue(args, 'btf');
  if ((btfFile !== undefined) !== (args.positionals[0] === 'kernel'))
    throw new UsageError(
      "'functions kernel --btf FILE' lists a kernel's functions from a saved BTF (/sys/kernel/btf/vmlinux); --btf goes with 'kernel' only",
    );
  const baseFile = oneValue(args, 'base-btf');
  if (baseFile !== undefined && btfFile === undefined)
    throw new UsageError("--base-btf FILE (the kernel's BTF) goes with 'functions kernel --btf MODULE_BTF' (a module's split BTF)");
  if (btfFile !== undefined) {
    // A module's BTF (/sys/kernel/btf/MODULE) is split: it is read on top of the kernel's, and lists the module's own.
    const base = baseFile !== undefined ? parseBtf(new Uint8Array(readFileSync(baseFile))) : undefined;
    btfFunctions(parseBtf(new Uint8Array(readFileSync(btfFile)), base), re, args.flags.has('json'), io);
    return;
  }
  const index = await indexFor(args);
  const fns = (re ? index.functionsMatching(re, true) : index.functions().slice()).sort(
    (a, b) => byName.compare(a.name, b.name) || Number((a.address ?? 0n) - (b.address ?? 0n)),
  );
  if (args.flags.has('json')) {
    writeJsonArray(io, fns, functionJson);
    return;
  }
  for (const f of fns) {
    const where = f.file ? `${f.file}:${f.line ?? '?'}` : '(no source)';
    const addr = f.address !== undefined ? hexAddress(f.address) : '-';
    const params = f.params.map((p) => `${p.type} ${p.name}@${p.inferred ? '≈' : ''}${p.location}`).join(', ');
    const note = f.probeable ? siteNote(f) : `  [not probe-able: ${f.reason ?? 'no code'}]`;
    io.out(`${addr.padEnd(12)} ${f.name}(${params})  ${where}${note}\n`);
  }
}

/** `functions kernel --btf FILE`: each FUNC of the BTF and its parameters (no addresses, files or sites: no DWARF). */
function btfFunctions(btf: Btf, re: RegExp | undefined, json: boolean, io: Io): void {
  const rows = btf
    .funcNames()
    .filter((n) => !re || re.test(n))
    .map((name) => {
      const fn = btf.type(btf.funcs(name)[0]);
      const proto = fn.kind === 'func' ? btf.type(fn.type) : undefined;
      const params = proto?.kind === 'func_proto' ? proto.params.map((p) => ({ name: p.name, type: btf.typeName(p.type) })) : [];
      return { name, params, returns: proto?.kind === 'func_proto' ? btf.typeName(proto.returnType) : 'void', source: 'btf' };
    });
  if (json) {
    writeJsonArray(io, rows, (r) => r);
    return;
  }
  for (const r of rows) io.out(`${r.returns} ${r.name}(${r.params.map((p) => `${p.type} ${p.name}`).join(', ')})\n`);
}

export async function linesCommand(argv: string[], io: Io): Promise<void> {
  const args = parseArgs(argv, COMMON);
  const [, target, extra] = args.positionals;
  if (!target) throw new UsageError('missing SRC[:LINE] (a source file of the binary, optionally with a line)');
  if (extra) throw new UsageError(`unexpected argument '${extra}'`);
  const index = await indexFor(args);
  const m = /^(.*?)(?::([0-9]+))?$/.exec(target)!;
  const file = resolveSourceFile(index, m[1]);
  const lines = m[2] !== undefined ? [Number(m[2])] : index.probeableLines(file);
  const rows = lines
    .map((line) => ({ file, line, addresses: index.addressesForLine(file, line).map(hexAddress) }))
    .filter((r) => r.addresses.length > 0);
  if (m[2] !== undefined && rows.length === 0) throw new UsageError(`line ${m[2]} of ${file} has no code in ${index.path}`);
  if (args.flags.has('json')) writeJsonArray(io, rows, (r) => r);
  else for (const r of rows) io.out(`${r.file}:${r.line}\t${r.addresses.join(' ')}\n`);
}

export async function varsCommand(argv: string[], io: Io): Promise<void> {
  const args = parseArgs(argv, COMMON);
  const [, point, extra] = args.positionals;
  if (!point) throw new UsageError('missing POINT (FUNC[@SRC][:RLN] or SRC:LINE)');
  if (extra) throw new UsageError(`unexpected argument '${extra}'`);
  const p = parsePoint(point);
  if (p.kind === 'usdt') throw new UsageError('vars takes a function or source line; USDT arguments are listed by `probelens usdt`');
  const index = await indexFor(args);
  const sites = resolvePoint(p, index);
  const out: Array<{ address: string; function: string | null; vars: Awaited<ReturnType<typeof variablesAtSite>> }> = [];
  for (const site of sites)
    out.push({
      address: hexAddress(site.address),
      function: site.fn?.name ?? null,
      vars: await variablesAtSite(index, site, args.values.get('debug-dir')),
    });
  if (args.flags.has('json')) {
    // One site is the common case and the contract's shape; several (a line emitted in many places) nest.
    io.out(`${toJson(out.length === 1 ? out[0].vars : out, 2)}\n`);
    return;
  }
  for (const s of out) {
    io.out(`Available variables at ${s.function ?? '?'} (${s.address})\n`);
    for (const v of s.vars) io.out(`\t${v.kind.padEnd(6)} ${v.type} ${v.name}\t${v.location}\n`);
  }
}

export async function usdtCommand(argv: string[], io: Io): Promise<void> {
  const args = parseArgs(argv, COMMON);
  if (args.positionals.length > 1) throw new UsageError(`unexpected argument '${args.positionals[1]}'`);
  const index = await indexFor(args);
  const rows = index.usdtProbes().map((p) => ({
    provider: p.provider,
    name: p.name,
    address: hexAddress(p.address),
    fileOffset: hexAddress(p.fileOffset),
    semaphore: p.semaphore !== undefined ? hexAddress(p.semaphore) : null,
    semaphoreFileOffset: p.semaphoreFileOffset !== undefined ? hexAddress(p.semaphoreFileOffset) : null,
    args: p.args.map((a) => ({ size: a.size, signed: a.signed, operand: a.operand })),
  }));
  if (args.flags.has('json')) io.out(`${toJson(rows, 2)}\n`);
  else
    for (const r of rows)
      io.out(
        `${r.provider}:${r.name}\t${r.address}${r.semaphore ? ` semaphore ${r.semaphore}` : ''}\t${r.args.map((a) => `${a.signed ? '-' : ''}${a.size}@${a.operand}`).join(' ')}\n`,
      );
}

/** "  [3 sites: entry, 2 inlined]" when a function has more code than its entry. */
function siteNote(f: IndexedFunction): string {
  if (f.sites.length === 1 && f.sites[0].kind === 'entry') return '';
  const counts = new Map<string, number>();
  for (const s of f.sites) counts.set(s.kind, (counts.get(s.kind) ?? 0) + 1);
  const parts = [...counts].map(([k, n]) => (n === 1 ? k : `${n} ${k}`));
  return `  [${f.sites.length} site${f.sites.length === 1 ? '' : 's'}: ${parts.join(', ')}]`;
}
