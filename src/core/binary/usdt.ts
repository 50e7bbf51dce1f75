// USDT probes from `.note.stapsdt` (systemtap's sdt.h, note type 3, owner "stapsdt"): the descriptor holds
// three address-sized words — probe pc, the link-time address of `.stapsdt.base`, and the semaphore (0 when
// none) — then provider\0name\0arguments\0. If the object was relocated after linking (prelink), the note's
// words are stale by the difference between the actual `.stapsdt.base` address and the recorded one, so
// both the pc and the semaphore are shifted by it, as systemtap and gdb do.
import { elfReader, hex } from './byteReader';
import { ElfFormatError } from './errors';
import type { ElfFile } from './elfFile';
import { NT_STAPSDT } from './notes';

export type UsdtOperand =
  /** A register as written, without `%` (x86: "rdi", "esi", "r8d"; arm64: "x1", "w0", "sp"). */
  | { kind: 'register'; register: string }
  /** OFF(%base[,%index,scale]) on x86 (OFF may be a symbol, e.g. `counter(%rip)`), [base, OFF] on arm64. */
  | { kind: 'memory'; base: string; offset: number; symbol?: string; index?: string; scale?: number }
  /** `$N` on x86, a bare integer on arm64. */
  | { kind: 'constant'; value: bigint }
  | { kind: 'unknown' };

export interface UsdtArg {
  /** Size in bytes (1, 2, 4, 8). */
  size: number;
  signed: boolean;
  operand: UsdtOperand;
  /** The operand text as in the note ("-4(%rbp)", "[sp, 8]"). */
  text: string;
}

export interface UsdtProbe {
  provider: string;
  name: string;
  /** Probe address, adjusted by `.stapsdt.base`. */
  address: bigint;
  fileOffset: number;
  /** Semaphore address, or undefined when the probe has none. */
  semaphore?: bigint;
  /** File offset of the semaphore (uprobe `(REF_CTR_OFFSET)`), when there is one. */
  semaphoreFileOffset?: number;
  args: UsdtArg[];
  /** The raw argument string of the note. */
  argsText: string;
}

export function readUsdtProbes(elf: ElfFile): UsdtProbe[] {
  const notes = elf.notes('.note.stapsdt').filter((n) => n.owner === 'stapsdt' && n.type === NT_STAPSDT);
  if (notes.length === 0) return [];
  const baseSec = elf.section('.stapsdt.base');
  const probes: UsdtProbe[] = [];
  for (const n of notes) {
    const c = elfReader(n.desc, elf.littleEndian, '.note.stapsdt', n.descOffset);
    const pc = c.wordBig(elf.addressSize);
    const base = c.wordBig(elf.addressSize);
    const sema = c.wordBig(elf.addressSize);
    const provider = c.cstr();
    const name = c.cstr();
    const argsText = c.left > 0 ? c.cstr() : '';
    const shift = baseSec ? baseSec.addr - base : 0n;
    const address = pc + shift;
    const probe: UsdtProbe = {
      provider,
      name,
      address,
      fileOffset: elf.fileOffsetOf(address),
      args: parseUsdtArgs(argsText, elf.addressSize),
      argsText,
    };
    if (sema !== 0n) {
      probe.semaphore = sema + shift;
      try {
        probe.semaphoreFileOffset = elf.fileOffsetOf(probe.semaphore);
      } catch {
        throw new ElfFormatError(
          '.note.stapsdt',
          n.descOffset,
          `semaphore ${hex(probe.semaphore)} of ${provider}:${name} is not in the file's loaded data`,
        );
      }
    }
    probes.push(probe);
  }
  return probes;
}

/** Parses a stapsdt v3 argument string: space-separated `N@OPERAND`, N the size, negative when signed. */
export function parseUsdtArgs(text: string, addressSize: 4 | 8 = 8): UsdtArg[] {
  const args: UsdtArg[] = [];
  // arm64 memory operands contain a space ("[sp, 8]"), so tokens are matched, not split on blanks.
  const token = /(?:(-?\d+)@)?(\[[^\]]*\]|\S+)/g;
  for (const m of text.matchAll(token)) {
    // Without a size prefix (very old notes) the value is taken as an unsigned machine word.
    const n = m[1] === undefined ? addressSize : Number(m[1]);
    args.push({ size: Math.abs(n), signed: n < 0, operand: parseOperand(m[2]), text: m[2] });
  }
  return args;
}

const INT = /^[-+]?(?:0x[0-9a-f]+|\d+)$/i;

function toInt(s: string): number {
  const neg = s.startsWith('-');
  const body = s.replace(/^[-+]/, '');
  const v = Number(body.toLowerCase().startsWith('0x') ? parseInt(body, 16) : parseInt(body, 10));
  return neg ? -v : v;
}

function parseOperand(op: string): UsdtOperand {
  let m: RegExpMatchArray | null;
  if ((m = op.match(/^%([a-z][a-z0-9]*)$/i))) return { kind: 'register', register: m[1] };
  if ((m = op.match(/^\$(-?(?:0x[0-9a-f]+|\d+))$/i))) return { kind: 'constant', value: bigintOf(m[1]) };
  // x86 AT&T memory: [DISP|SYMBOL[+-DISP]](%base[,%index[,scale]])
  if ((m = op.match(/^([^(]*)\(%([a-z0-9]+)(?:,%([a-z0-9]+)(?:,(\d+))?)?\)$/i))) {
    const disp = m[1];
    const mem: UsdtOperand = { kind: 'memory', base: m[2], offset: 0 };
    if (m[3]) mem.index = m[3];
    if (m[4]) mem.scale = Number(m[4]);
    if (disp === '' || INT.test(disp)) mem.offset = disp === '' ? 0 : toInt(disp);
    else {
      const s = disp.match(/^([A-Za-z_.$][\w.$@]*)([-+](?:0x[0-9a-f]+|\d+))?$/i);
      if (!s) return { kind: 'unknown' };
      mem.symbol = s[1];
      mem.offset = s[2] ? toInt(s[2]) : 0;
    }
    return mem;
  }
  // arm64: [xN], [xN, OFF], [sp, #OFF]
  if ((m = op.match(/^\[\s*([a-z][a-z0-9]*)\s*(?:,\s*#?(-?(?:0x[0-9a-f]+|\d+))\s*)?\]$/i))) {
    return { kind: 'memory', base: m[1], offset: m[2] ? toInt(m[2]) : 0 };
  }
  if ((m = op.match(/^(?:[xw](?:[12]?\d|3[01])|sp|wsp)$/i))) return { kind: 'register', register: op };
  if (INT.test(op)) return { kind: 'constant', value: bigintOf(op) };
  return { kind: 'unknown' };
}

function bigintOf(s: string): bigint {
  const neg = s.startsWith('-');
  const v = BigInt(s.replace(/^[-+]/, ''));
  return neg ? -v : v;
}
