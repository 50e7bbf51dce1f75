// The one place fzstd is used (Node 20's zlib has no zstd). fzstd allocates whatever window a frame header
// declares (up to 2 GiB) unless it is given the output buffer, so we always give it one, sized by the
// caller's already-bounded expectation; it then allocates only its small decoding tables.
//
// fzstd 0.1.1's Huffman-weight reader loops forever when a corrupt FSE table gives both states zero bits
// (fpos never decreases; found by our fuzzing). It is loaded from its source with a guard added to that loop
// that fails as soon as more than 255 weights were read, which is the format's own limit.
// Tests: test/unit/core/binary/compressed.test.ts
import { fzstdSource } from './fzstdSource';

type Decompress = (input: Uint8Array, out?: Uint8Array) => Uint8Array;
let decompressFn: Decompress | undefined;

const LOOP = 'fpos -= btr1;';
const GUARDED = 'if (wc > 255) err(0); fpos -= btr1;';

function decompress(input: Uint8Array, out: Uint8Array): Uint8Array {
  if (!decompressFn) {
    const src = fzstdSource();
    if (src.split(LOOP).length !== 2)
      throw new Error('fzstd changed: its Huffman-weight loop was not found; review src/core/binary/zstd.ts');
    const mod: { exports: { decompress?: Decompress } } = { exports: {} };
    new Function('module', 'exports', 'require', src.replace(LOOP, GUARDED))(mod, mod.exports, require);
    if (!mod.exports.decompress) throw new Error('fzstd changed: no decompress export');
    decompressFn = mod.exports.decompress;
  }
  return decompressFn(input, out);
}

export class ZstdDataError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'ZstdDataError';
  }
}

/** Decodes a single zstd frame into exactly `expectedSize` bytes. Throws ZstdDataError on any inconsistency. */
export function zstdDecompressExact(input: Uint8Array, expectedSize: number): Uint8Array {
  const declared = frameContentSize(input);
  if (declared !== undefined && declared !== expectedSize) {
    throw new ZstdDataError(`zstd frame declares ${declared} bytes but the section header says ${expectedSize}`);
  }
  const out = new Uint8Array(expectedSize);
  try {
    const got = decompress(input, out);
    // Given a buffer, fzstd returns that buffer; a different object means it did not decode into it.
    if (got.buffer !== out.buffer) throw new ZstdDataError('zstd data did not decode into the expected size');
  } catch (e) {
    if (e instanceof ZstdDataError) throw e;
    throw new ZstdDataError(`zstd data is corrupt (${(e as Error).message})`);
  }
  return out;
}

/** Frame_Content_Size from a zstd frame header (RFC 8878 §3.1.1.1), or undefined when absent/not a frame. */
function frameContentSize(d: Uint8Array): number | undefined {
  if (d.length < 6 || d[0] !== 0x28 || d[1] !== 0xb5 || d[2] !== 0x2f || d[3] !== 0xfd) {
    throw new ZstdDataError('not a zstd frame (bad magic)');
  }
  const fhd = d[4];
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd >> 5) & 1;
  const dictFlag = fhd & 3;
  let pos = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][dictFlag];
  const fcsBytes = fcsFlag === 0 ? singleSegment : [1, 2, 4, 8][fcsFlag];
  if (fcsBytes === 0) return undefined;
  if (pos + fcsBytes > d.length) throw new ZstdDataError('zstd frame header is truncated');
  let v = 0;
  for (let i = 0; i < fcsBytes; i++) v += d[pos + i] * 2 ** (8 * i);
  pos += fcsBytes;
  return fcsBytes === 2 ? v + 256 : v;
}
