// The serialisable full index of one binary: every function with its declaring file/line,
// entry address, file offset and parameters, plus the line table. It is what the worker builds, what the cache
// stores (v8.serialize) and what BinaryIndex answers queries from. Locals and struct layouts are not in it:
// they are decoded per unit on demand from the binary itself.
// Tests: test/unit/core/index/binaryIndex.test.ts, test/unit/core/index/oracles.test.ts, test/unit/core/index/sites.test.ts
import type { SiteKind } from '../../shared/site';
import type { UsdtOperand } from '../binary/usdt';

export type { SiteKind } from '../../shared/site';

// 11: a relocatable object (a .o, a module's .ko) is indexed with its sections laid out and relocated (binary/relocatable.ts).
export const INDEX_FORMAT = 11;

export interface IndexedParam {
  name: string;
  /** C-like type string: "struct account *", "const char *", "int64_t". */
  type: string;
  /** Where the value is at the function's entry, as tracefs fetcharg text ("%di", "+8(%sp)", "\\7" for a constant), or "unavailable: why". */
  location: string;
  /** DWARF gives no location at all: `location` is where the C calling convention puts it, a guess. */
  inferred?: boolean;
}

export interface FunctionSite {
  kind: SiteKind;
  address: bigint;
  /** File offset by the PT_LOAD formula (set once the executable's program headers are known). */
  fileOffset?: bigint;
  /** The site's own DIE (subprogram or inlined_subroutine) and its unit, for its variables' locations. */
  dieOffset: number;
  unitOffset: number;
  /** The function an inlined copy sits in, or the function a part was split from. */
  caller?: string;
  /** Call site of an inlined copy. */
  file?: string;
  line?: number;
  /** The symbol at a clone's or part's address (`f.constprop.0`). */
  symbol?: string;
  /**
   * The copy's code as flat [lo, hi, lo, hi…] ranges: an out-of-line copy's include its `.cold` blocks, an
   * inlined copy's include the fragments of the same call that lost the entry marker to it. What a line probe
   * uses to say which copy an address runs in.
   */
  ranges?: number[];
}

export interface IndexedFunction {
  /** Qualified, demangled name users type: "add_ints", "shapes::Circle::area", "main.(*Account).Deposit". */
  name: string;
  /** The symbol as stored (mangled for C++/Rust), when it differs from name. */
  linkageName?: string;
  /** Declaring source file, absolute and normalised (comp_dir resolved). */
  file?: string;
  /** Declaration line. */
  line?: number;
  /** Entry address (the symbol's value); undefined when the function has no code of its own. */
  address?: bigint;
  /** File offset of the entry address by the PT_LOAD formula. */
  fileOffset?: bigint;
  /** Code size in bytes of the entry range. */
  size: number;
  params: IndexedParam[];
  /** Number of DW_TAG_inlined_subroutine instances of this function elsewhere. */
  inlinedInstances: number;
  /** Every place the function's code is (see FunctionSite), entry first, then clones, parts, inlined copies. */
  sites: FunctionSite[];
  /** Other symbol names of the entry address (`__attribute__((alias))`, `.localalias`), which name it too. */
  aliases?: string[];
  /** At least one site. */
  probeable: boolean;
  /** Why not probe-able ("fully inlined", "no code", "discarded section"). */
  reason?: string;
  external: boolean;
  /** Section offsets of its unit and DIE in .debug_info, for on-demand decoding; -1 for symbol-only entries. */
  unitOffset: number;
  dieOffset: number;
}

/**
 * Line-table rows of the whole binary, sorted by address; a sequence's rows stay in order, and a sequence's
 * end row precedes the rows of a sequence starting at the same address. Parallel arrays keep the cache small
 * and fast to load.
 */
export interface LineRows {
  address: Float64Array;
  line: Uint32Array;
  /** Index into IndexData.files. */
  file: Uint32Array;
  /** Bit flags: LINE_IS_STMT, LINE_PROLOGUE_END, LINE_END_SEQUENCE. */
  flags: Uint8Array;
}
export const LINE_IS_STMT = 1;
export const LINE_PROLOGUE_END = 2;
export const LINE_END_SEQUENCE = 4;

export interface UsdtArg {
  size: number;
  signed: boolean;
  /** The operand as written in the note ("%rdi", "-16(%rbp)", "$5", "[sp, 8]"). */
  operand: string;
  parsed: UsdtOperand;
}
export interface IndexedUsdt {
  provider: string;
  name: string;
  address: bigint;
  fileOffset: bigint;
  semaphore?: bigint;
  semaphoreFileOffset?: bigint;
  args: UsdtArg[];
}

export interface IndexData {
  format: typeof INDEX_FORMAT;
  path: string;
  size: number;
  mtimeMs: number;
  buildId?: string;
  arch: 'x86_64' | 'aarch64';
  elfType: string;
  /** Where DWARF came from when it was not the binary itself. */
  debugFile?: string;
  /** True when no DWARF was found: functions come from the symbol table only. */
  symbolsOnly: boolean;
  /**
   * Set when only the units naming this source file were indexed (BuildOptions.onlyFile): its functions and
   * lines are those of the whole index, the rest of the binary is missing. Never cached.
   */
  onlyFile?: string;
  go?: { version: string; regabi: boolean };
  functions: IndexedFunction[];
  files: string[];
  lines: LineRows;
  usdt: IndexedUsdt[];
}

export function isIndexData(v: unknown): v is IndexData {
  return (
    typeof v === 'object' && v !== null && (v as { format?: unknown }).format === INDEX_FORMAT && Array.isArray((v as IndexData).functions)
  );
}
