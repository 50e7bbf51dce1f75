// Go binaries: the toolchain version and main module come from `.go.buildinfo` (runtime/debug.BuildInfo's
// on-disk form, see cmd/go/internal/version): a 32-byte header "\xff Go buildinf:", pointer size, flags, then
// either (Go ≥ 1.18, flag bit 1) two varint-length-prefixed strings inline, or (older) two pointers to Go
// string headers {data, len} that we follow through the PT_LOAD mapping. `.note.go.buildid` alone still marks
// a Go binary whose version is unknown.
import { type ByteReader, elfReader } from './byteReader';
import type { Arch, ElfFile } from './elfFile';
import { ElfFormatError } from './errors';
import { NT_GO_BUILDID } from './notes';

export type GoAbi = 'register' | 'stack';

export interface GoInfo {
  /** "go1.19.8", or undefined when only the build-id note was found. */
  version?: string;
  major?: number;
  minor?: number;
  /** Main package path ("example.com/app/cmd/app"). */
  mainPath?: string;
  /** Main module path ("example.com/app"). */
  modulePath?: string;
  /** Go's own build id (from .note.go.buildid), not the GNU one. */
  goBuildId?: string;
  /**
   * Calling convention of Go functions: 'register' is ABIInternal (amd64 since Go 1.17, arm64 since 1.18),
   * 'stack' the older stack-based ABI0. Undefined when the version is unknown.
   */
  abi?: GoAbi;
  /** Integer argument registers in ABIInternal order (DWARF/assembler names), empty for the stack ABI. */
  intArgRegisters: string[];
}

const MAGIC = Buffer.from('\xff Go buildinf:', 'latin1');
const AMD64_REGS = ['rax', 'rbx', 'rcx', 'rdi', 'rsi', 'r8', 'r9', 'r10', 'r11'];
const ARM64_REGS = Array.from({ length: 16 }, (_, i) => `x${i}`);
const MAX_STRING = 1 << 20;

export function readGoInfo(elf: ElfFile): GoInfo | undefined {
  const info: GoInfo = { intArgRegisters: [] };
  let isGo = false;
  const note = elf.notes('.note.go.buildid').find((n) => n.owner === 'Go' && n.type === NT_GO_BUILDID);
  if (note) {
    isGo = true;
    info.goBuildId = Buffer.from(note.desc).toString('latin1');
  }
  const sec = elf.section('.go.buildinfo');
  const bytes = sec && elf.rawSectionBytes(sec);
  if (sec && bytes && bytes.length >= 32 && Buffer.from(bytes.subarray(0, 14)).equals(MAGIC)) {
    isGo = true;
    const ptrSize = bytes[14];
    const flags = bytes[15];
    let version: string, modinfo: string;
    if (flags & 2) {
      const c = elfReader(bytes, true, '.go.buildinfo', sec.offset, 32);
      version = varintString(c);
      modinfo = varintString(c);
    } else {
      if (ptrSize !== 4 && ptrSize !== 8) throw new ElfFormatError('.go.buildinfo', sec.offset + 14, `pointer size ${ptrSize}`);
      const le = (flags & 1) === 0;
      const c = elfReader(bytes, le, '.go.buildinfo', sec.offset, 16);
      const vPtr = c.wordBig(ptrSize);
      const mPtr = c.wordBig(ptrSize);
      version = goString(elf, vPtr, ptrSize, le);
      modinfo = goString(elf, mPtr, ptrSize, le);
    }
    info.version = version;
    // modinfo is framed by 16-byte sentinels; its lines are tab-separated ("path\t…", "mod\tPATH\tVER\t…").
    const text = modinfo.length >= 33 && modinfo.charCodeAt(modinfo.length - 17) === 0x0a ? modinfo.slice(16, -16) : modinfo;
    for (const line of text.split('\n')) {
      const f = line.split('\t');
      if (f[0] === 'path' && f[1]) info.mainPath = f[1];
      if (f[0] === 'mod' && f[1]) info.modulePath = f[1];
    }
    const m = version.match(/^go(\d+)\.(\d+)/);
    if (m) {
      info.major = Number(m[1]);
      info.minor = Number(m[2]);
      info.abi = registerAbi(elf.arch, info.major, info.minor) ? 'register' : 'stack';
      if (info.abi === 'register') info.intArgRegisters = elf.arch === 'aarch64' ? ARM64_REGS : AMD64_REGS;
    }
  }
  return isGo ? info : undefined;
}

function registerAbi(arch: Arch | undefined, major: number, minor: number): boolean {
  if (major > 1) return arch === 'x86_64' || arch === 'aarch64';
  if (arch === 'x86_64') return minor >= 17;
  if (arch === 'aarch64') return minor >= 18;
  return false;
}

function varintString(c: ByteReader): string {
  let len = 0;
  for (let shift = 0; ; shift += 7) {
    if (shift > 28) c.fail('string length varint is too long');
    const b = c.u8();
    len += (b & 0x7f) * 2 ** shift;
    if (!(b & 0x80)) break;
  }
  if (len > MAX_STRING) c.fail(`string of ${len} bytes is implausible`);
  return Buffer.from(c.bytes(len)).toString('utf8');
}

function goString(elf: ElfFile, headerAddr: bigint, ptrSize: 4 | 8, le: boolean): string {
  const h = elfReader(elf.bytesAt(headerAddr, ptrSize * 2), le, '.go.buildinfo string header', elf.fileOffsetOf(headerAddr));
  const data = h.wordBig(ptrSize);
  const len = h.wordBig(ptrSize);
  if (len > BigInt(MAX_STRING)) h.fail(`string of ${len} bytes is implausible`, 0);
  if (len === 0n) return '';
  return Buffer.from(elf.bytesAt(data, Number(len))).toString('utf8');
}
