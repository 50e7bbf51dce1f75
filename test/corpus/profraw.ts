// The exact-count oracle of the Rust corpus program: LLVM's raw profile (.profraw, format version 10, written at
// exit by a binary built with `-C profile-generate`). With -pgo-instrument-entry, counter 0 of each function's
// record counts its entry block, the calls of the function; the counters are placed before inlining, so a copy
// inlined anywhere still adds to the function it came from. Read here without llvm-profdata, whose Debian build is
// older than the format rustc writes.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { inflateSync } from 'node:zlib';

const execFileP = promisify(execFile);
const MAGIC = 0xff6c70726f667281n; // "\xffLPROFr\x81" read as a little-endian u64 (64-bit target)
const HEADER_FIELDS = 16;
const DATA_RECORD = 64;
const VARIANT_INSTR_ENTRY = 1n << 58n;

/** A record's NameRef: the low 64 bits of the name's MD5, little-endian. */
const nameRef = (n: string): bigint => createHash('md5').update(n, 'latin1').digest().readBigUInt64LE(0);

/** Names: chunks of ULEB128 length, ULEB128 compressed length (0: stored), then zlib data; names joined by \x01. */
function readNames(b: Buffer, start: number, end: number): string[] {
  const names: string[] = [];
  let p = start;
  const uleb = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const x = b[p++];
      v += (x & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(x & 0x80)) return v;
    }
  };
  while (p < end) {
    const size = uleb();
    const compressed = uleb();
    if (size === 0) break; // padding to 8 bytes
    const text = compressed ? inflateSync(b.subarray(p, p + compressed)) : b.subarray(p, p + size);
    p += compressed || size;
    names.push(...text.toString('latin1').split('\x01'));
  }
  return names;
}

/** A function record's PGO name: `file;symbol` for a local symbol (the file its codegen unit is), else `symbol`. */
export const symbolOfPgoName = (name: string): string => name.slice(name.lastIndexOf(';') + 1);

/**
 * Calls per PGO name in one .profraw file. Throws on anything but a version-10 profile with entry counters, so a
 * different toolchain fails loudly instead of counting something else.
 */
export function readProfraw(file: string): Map<string, bigint> {
  const b = readFileSync(file);
  if (b.length < HEADER_FIELDS * 8 || b.readBigUInt64LE(0) !== MAGIC) throw new Error(`${file}: not a 64-bit LLVM raw profile`);
  const h = Array.from({ length: HEADER_FIELDS }, (_, i) => b.readBigUInt64LE(i * 8));
  const version = h[1] & 0xffffffffn;
  if (version !== 10n) throw new Error(`${file}: raw profile version ${version}, this reader knows 10`);
  if (!(h[1] & VARIANT_INSTR_ENTRY)) throw new Error(`${file}: counters without the entry counter (-pgo-instrument-entry)`);
  const [, , binaryIds, numData, padBeforeCounters, numCounters, padAfterCounters, bitmapBytes, padAfterBitmap, namesSize] = h.map(Number);
  let countersDelta = b.readBigInt64LE(10 * 8);
  const dataStart = HEADER_FIELDS * 8 + binaryIds;
  const countersStart = dataStart + numData * DATA_RECORD + padBeforeCounters;
  const namesStart = countersStart + numCounters * 8 + padAfterCounters + bitmapBytes + padAfterBitmap;
  if (namesStart + namesSize > b.length) throw new Error(`${file}: truncated (${b.length} bytes)`);

  const byRef = new Map<bigint, string>();
  for (const n of readNames(b, namesStart, namesStart + namesSize)) byRef.set(nameRef(n), n);

  const calls = new Map<string, bigint>();
  for (let i = 0; i < numData; i++) {
    const o = dataStart + i * DATA_RECORD;
    const name = byRef.get(b.readBigUInt64LE(o));
    // The counter pointer is relative to the record itself, the header's delta to the first record.
    const offset = Number(b.readBigInt64LE(o + 16) - countersDelta);
    countersDelta -= BigInt(DATA_RECORD);
    const n = b.readUInt32LE(o + 48);
    if (name === undefined || offset < 0 || offset % 8 || offset + n * 8 > numCounters * 8 || n === 0)
      throw new Error(`${file}: record ${i} does not fit the profile (name ${name ?? '?'}, counters at ${offset})`);
    calls.set(name, (calls.get(name) ?? 0n) + b.readBigUInt64LE(countersStart + offset));
  }
  return calls;
}

/**
 * Where the binary's code increments each function's entry counter (the counter updates being atomic), by PGO name, read from the binary's own profile sections with readelf's section table: what the code
 * counts as a call of each function, wherever the compiler put it — also where no debug information describes it.
 */
export async function entryCounterIncrements(bin: string): Promise<Map<string, bigint[]>> {
  const { stdout } = await execFileP('readelf', ['-SW', bin], { maxBuffer: 64 << 20 });
  const sections = new Map<string, { addr: bigint; offset: number; size: number }>();
  for (const m of stdout.matchAll(/^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)/gm))
    sections.set(m[1], { addr: BigInt(`0x${m[2]}`), offset: parseInt(m[3], 16), size: parseInt(m[4], 16) });
  const need = (n: string) => {
    const s = sections.get(n);
    if (!s) throw new Error(`${bin} has no ${n} section (not built with -C profile-generate?)`);
    return s;
  };
  const b = readFileSync(bin);
  const text = need('.text');
  const data = need('__llvm_prf_data');
  const namesSec = need('__llvm_prf_names');
  const byRef = new Map<bigint, string>();
  for (const n of readNames(b, namesSec.offset, namesSec.offset + namesSec.size)) byRef.set(nameRef(n), n);
  const nameOfCounter = new Map<bigint, string>();
  for (let i = 0; i * DATA_RECORD < data.size; i++) {
    const o = data.offset + i * DATA_RECORD;
    const name = byRef.get(b.readBigUInt64LE(o));
    if (name === undefined) continue;
    nameOfCounter.set(data.addr + BigInt(i * DATA_RECORD) + b.readBigInt64LE(o + 16), name);
  }
  const out = new Map<string, bigint[]>();
  // `lock incq disp32(%rip)` (f0 48 ff 05 disp32), or the counter's address taken for a `lock incq (%reg)` (lea
  // disp32(%rip),%reg: 48|4c 8d modrm with mod 00, rm 101); either target is relative to the next instruction.
  const found = (at: bigint, target: bigint) => {
    const name = nameOfCounter.get(target);
    if (name !== undefined) out.set(name, [...(out.get(name) ?? []), at]);
  };
  for (let p = text.offset; p + 8 <= text.offset + text.size; p++) {
    const at = text.addr + BigInt(p - text.offset);
    if (b[p] === 0xf0 && b[p + 1] === 0x48 && b[p + 2] === 0xff && b[p + 3] === 0x05) found(at, at + 8n + BigInt(b.readInt32LE(p + 4)));
    else if ((b[p] === 0x48 || b[p] === 0x4c) && b[p + 1] === 0x8d && (b[p + 2] & 0xc7) === 0x05)
      found(at, at + 7n + BigInt(b.readInt32LE(p + 3)));
  }
  return out;
}
