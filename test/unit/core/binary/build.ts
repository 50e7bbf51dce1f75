// Throwaway binaries for the ELF-layer tests, built with the real toolchain into a per-run temp dir, plus
// small wrappers over the independent oracles (readelf, nm, perf probe, objcopy).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const workDir = mkdtempSync(join(tmpdir(), 'probelens-elf-'));
process.on('exit', () => rmSync(workDir, { recursive: true, force: true }));

export function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: opts.cwd, env: opts.env ?? process.env, maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

export function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

export const CALLS_C = `
#include <stdio.h>
#include <stdlib.h>
struct account { long id; int balance; };
static int helper(int x) { return x * 3 + 1; }
int deposit(struct account *a, int amount) { a->balance += helper(amount); return a->balance; }
long compute(long a, long b) { return a * b + deposit(&(struct account){1, 2}, (int)a); }
void __attribute__((noinline)) alias_target(void) { puts("x"); }
void alias_name(void) __attribute__((alias("alias_target")));
int main(int argc, char **argv) { (void)argv; alias_name(); printf("%ld\\n", compute(argc, 7)); return 0; }
`;

/** Compiles C source with the given compiler and flags into workDir/name; returns the path. */
export function buildC(name: string, source: string, flags: string[], cc = 'gcc'): string {
  const src = join(workDir, `${name}.c`);
  writeFileSync(src, source);
  const out = join(workDir, name);
  run(cc, [...flags, src, '-o', out]);
  return out;
}

export interface ReadelfSegment {
  type: string;
  offset: number;
  vaddr: bigint;
  filesz: number;
  memsz: bigint;
}
export function readelfLoads(bin: string): ReadelfSegment[] {
  return run('readelf', ['-lW', bin])
    .split('\n')
    .filter((l) => /^\s+LOAD\s/.test(l))
    .map((l) => {
      const f = l.trim().split(/\s+/);
      return { type: f[0], offset: Number(f[1]), vaddr: BigInt(f[2]), filesz: Number(f[4]), memsz: BigInt(f[5]) };
    });
}

export interface ReadelfSection {
  index: number;
  name: string;
  type: string;
  addr: bigint;
  offset: number;
  size: number;
  entsize: number;
  flags: string;
  align: bigint;
}
export function readelfSections(bin: string): ReadelfSection[] {
  const out: ReadelfSection[] = [];
  for (const l of run('readelf', ['-SW', bin]).split('\n')) {
    const m = l.match(
      /^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([A-Za-z]*)\s+\d+\s+\d+\s+(\d+)\s*$/,
    );
    if (!m || m[1] === '0') continue;
    out.push({
      index: Number(m[1]),
      name: m[2],
      type: m[3],
      addr: BigInt(`0x${m[4]}`),
      offset: parseInt(m[5], 16),
      size: parseInt(m[6], 16),
      entsize: parseInt(m[7], 16),
      flags: m[8],
      align: BigInt(m[9]),
    });
  }
  return out;
}

/** Defined FUNC/IFUNC symbols of one table per `readelf -sW`: name → address. */
export function readelfFunctions(bin: string, table: '.symtab' | '.dynsym'): Map<string, bigint> {
  const m = new Map<string, bigint>();
  const text = run('readelf', ['-W', table === '.symtab' ? '--syms' : '--dyn-syms', bin]);
  const part = text.split(/Symbol table '/).find((p) => p.startsWith(table)) ?? '';
  for (const l of part.split('\n')) {
    // Num: Value Size Type Bind Vis Ndx Name[@version] — Go names may contain spaces ("struct { … }").
    const f = l.match(/^\s*\d+:\s+([0-9a-f]+)\s+\S+\s+(\S+)\s+\S+\s+\S+\s+(\S+)\s+(.+)$/);
    if (!f || !/^(FUNC|IFUNC)$/.test(f[2]) || f[3] === 'UND' || f[3] === 'ABS') continue;
    m.set(f[4].replace(/@.*$/, ''), BigInt(`0x${f[1]}`));
  }
  return m;
}

/**
 * The file offsets `perf probe -D` computes for FUNC (or sdt_PROVIDER:NAME): one per site, so a function
 * that was also inlined elsewhere lists its inlined copies too.
 */
export function perfProbeOffsets(bin: string, point: string): number[] {
  const r = spawnSync('perf', ['probe', '-x', bin, '-D', point], { encoding: 'utf8' });
  return [...(r.stdout ?? '').matchAll(/:0x([0-9a-f]+)/g)].map((m) => parseInt(m[1], 16));
}

export function buildIdOf(bin: string): string | undefined {
  return run('readelf', ['-n', bin]).match(/Build ID: ([0-9a-f]+)/)?.[1];
}
