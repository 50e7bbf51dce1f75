// The cache's on-disk shape of an index (see codec.ts): its columns, and the constants its readers share.
// Tests: test/unit/core/index/codec.test.ts
import type { INDEX_FORMAT, IndexData } from './model';

export const CODEC_VERSION = 5;

export interface EncodedIndex {
  codec: typeof CODEC_VERSION;
  format: typeof INDEX_FORMAT;
  meta: Omit<IndexData, 'functions'>;
  /** All strings, NUL-separated, UTF-8. */
  strings: Uint8Array;
  /**
   * Where each string starts in `strings`, and one past the end (`strings.length + 1`): string i is the bytes from
   * stringStarts[i] up to the NUL before stringStarts[i + 1]. Stored so that a load need not scan the table.
   */
  stringStarts: Uint32Array;
  fn: {
    name: Uint32Array;
    linkage: Uint32Array;
    file: Uint32Array;
    line: Uint32Array;
    /** 64-bit columns: a kernel's addresses lie above 2^53. */
    address: BigUint64Array;
    fileOffset: Float64Array;
    size: Float64Array;
    inlined: Uint32Array;
    flags: Uint8Array;
    reason: Uint32Array;
    unitOffset: Float64Array;
    dieOffset: Float64Array;
    paramStart: Uint32Array;
    paramCount: Uint32Array;
    siteStart: Uint32Array;
    siteCount: Uint32Array;
    /** String id of the function's aliases, joined by U+0001 (symbol names never hold it). */
    aliases: Uint32Array;
  };
  /** inferred: 1 when the location is the calling convention's guess (IndexedParam.inferred). */
  param: { name: Uint32Array; type: Uint32Array; location: Uint32Array; inferred: Uint8Array };
  site: {
    kind: Uint8Array;
    address: BigUint64Array;
    /** -1: no file offset. */
    fileOffset: Float64Array;
    dieOffset: Float64Array;
    unitOffset: Float64Array;
    caller: Uint32Array;
    file: Uint32Array;
    line: Uint32Array;
    symbol: Uint32Array;
    /** Each site's code ranges: rangeCount numbers (lo, hi pairs) from rangeStart in `ranges`. */
    rangeStart: Uint32Array;
    rangeCount: Uint32Array;
    ranges: Float64Array;
  };
  /**
   * A cache entry's sites for rows start … start + count - 1 (their `rangeStart` counted from the first row's
   * ranges), read from the entry without reading every site; undefined once `site` has been read whole (use it).
   */
  siteSlice?(start: number, count: number): EncodedIndex['site'] | undefined;
}

export const NONE = 0xffffffff;
/** Joins a function's aliases in one string (symbol names never hold it). */
export const ALIAS_SEP = '\u0001';
export const F_PROBEABLE = 1,
  F_EXTERNAL = 2,
  F_HAS_ADDRESS = 4,
  F_HAS_OFFSET = 8;
