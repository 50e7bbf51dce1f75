// Shared helpers for the DWARF tests: opening fixtures through the independent objcopy path and running the
// outside tools (nm, perf probe, readelf, gdb) whose answers the tests compare with ours.
import { execFileSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { fixtureOrSkip, type Fixture, type FixtureName } from '../../../helpers/fixtures';
import { missing } from '../../../helpers/require';
import { openDwarf, type Dwarf } from '../../../../src/core/dwarf/index';
import { sectionsOf } from './objcopySections';

export async function open(t: TestContext, name: FixtureName): Promise<{ f: Fixture; dw: Dwarf } | undefined> {
  const f = await fixtureOrSkip(t, name);
  if (!f) return undefined;
  return { f, dw: openDwarf(sectionsOf(f.debugFile ?? f.path), f.arch) };
}

export function tool(t: TestContext, cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 << 20 });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stdout?: string };
    if (err.code === 'ENOENT') {
      missing(t, `${cmd} is not installed`);
      return undefined;
    }
    return err.stdout ?? '';
  }
}

/** Function symbols from nm: name → address. */
export function nmFunctions(t: TestContext, bin: string): Map<string, number> | undefined {
  const out = tool(t, 'nm', ['--defined-only', bin]);
  if (out === undefined) return undefined;
  const m = new Map<string, number>();
  for (const line of out.split('\n')) {
    const [addr, kind, name] = line.trim().split(/\s+/);
    if (name && /^[tTwW]$/.test(kind)) m.set(name, parseInt(addr, 16));
  }
  return m;
}

/** perf probe -V FUNC: the (type, name) pairs it lists at the function's entry. */
export function perfVars(t: TestContext, bin: string, fn: string): Array<{ type: string; name: string }> | undefined {
  const out = tool(t, 'perf', ['probe', '-x', bin, '-V', fn]);
  if (out === undefined) return undefined;
  return out
    .split('\n')
    .filter((l) => l.startsWith('\t\t'))
    .map((l) => {
      const [type, name] = l.trim().split('\t');
      return { type, name };
    });
}

/** perf drops qualifiers and spaces ("char*" for "const char *"); compare types in that shape. */
export function perfShape(type: string): string {
  return type.replace(/\b(const|volatile|restrict)\b/g, '').replace(/\s+/g, '');
}
