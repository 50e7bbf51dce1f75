// Return sites of a function, for return probes that are ordinary uprobes on each RET instruction instead of a
// uretprobe: a uretprobe swaps the return address on the stack, and Go moves goroutine stacks, so a Go program
// dies with "unexpected return pc" (docs/architecture.md, kernel facts). The scan is a linear decode from the entry, the way
// objdump reads code: x86-64 through a real decoder (x86decoder.ts), since a 0xc3 byte may sit inside an
// immediate or displacement; AArch64 has fixed 4-byte instructions, so it is read word by word.
import { hex } from '../binary/byteReader';
import { decodeX86 } from './x86decoder';
import { unreachable } from '../../shared/unreachable';

export type ReturnArch = 'x86_64' | 'aarch64';

export interface ReturnScan {
  /** Address of every return instruction (for `repz ret`, the address of its prefix), ascending. */
  returns: bigint[];
  /**
   * Branches that leave the function without returning through it: direct jumps (conditional or not) whose
   * target is outside [address, address + size), and indirect jumps (`jmp *%rax`, `BR Xn`), which a linear
   * scan cannot follow — some of those are switch tables inside the function. Each real one is an exit that
   * no RET probe sees.
   */
  tailJumps: bigint[];
  /** Set when decoding stopped at bytes that are not an instruction and not trailing padding. */
  undecodable?: { address: bigint; reason: string };
}

/**
 * Every return of the function whose machine code is `code`, loaded at `address`, with its tail jumps and,
 * if any, the first bytes that could not be decoded. Never throws for bad code: callers refuse through
 * `requireReturnSites` or by inspecting the result.
 */
export function findReturnSites(arch: ReturnArch, code: Uint8Array, address: bigint): ReturnScan {
  return arch === 'x86_64' ? scanX86(code, address) : scanAarch64(code, address);
}

export class ReturnSitesError extends Error {
  constructor(
    readonly functionName: string,
    readonly reason: 'no-return' | 'undecodable',
    message: string,
  ) {
    super(message);
    this.name = 'ReturnSitesError';
  }
}

/**
 * The return sites to probe, or a ReturnSitesError saying why a return probe of `functionName` cannot be
 * placed safely: it never returns through a RET (tail calls only), or part of it could not be decoded, so
 * some RETs might be missed.
 */
export function requireReturnSites(functionName: string, arch: ReturnArch, code: Uint8Array, address: bigint): bigint[] {
  const scan = findReturnSites(arch, code, address);
  if (scan.undecodable) {
    const { address: at, reason } = scan.undecodable;
    throw new ReturnSitesError(
      functionName,
      'undecodable',
      `cannot place a return probe on ${functionName}: its code at ${hex(at)} could not be decoded (${reason}), ` +
        'so some of its returns might be missed; probe its entry or a source line before the return instead',
    );
  }
  if (scan.returns.length === 0) {
    const exits = scan.tailJumps.length
      ? `it leaves only through jump${scan.tailJumps.length > 1 ? 's' : ''} at ${scan.tailJumps.map(hex).join(', ')} (a tail call)`
      : 'it has no return instruction (it never returns)';
    throw new ReturnSitesError(
      functionName,
      'no-return',
      `cannot place a return probe on ${functionName}: ${exits}; probe the return of the function it jumps to, ` +
        'or a source line before the jump',
    );
  }
  return scan.returns;
}

// Bytes compilers and linkers fill the gap after a function's last instruction with: INT3 (Go, and GCC's
// -fcf-protection padding), NOP and zero. An undecodable instruction followed by nothing else is the end.
function onlyPadding(code: Uint8Array, from: number): boolean {
  for (let i = from; i < code.length; i++) {
    const b = code[i];
    if (b !== 0xcc && b !== 0x90 && b !== 0x00) return false;
  }
  return true;
}

function scanX86(code: Uint8Array, address: bigint): ReturnScan {
  const end = address + BigInt(code.length);
  const out: ReturnScan = { returns: [], tailJumps: [] };
  decodeX86(code, address, (step) => {
    if ('invalid' in step) {
      if (!onlyPadding(code, Number(step.address - address))) out.undecodable = { address: step.address, reason: step.reason };
      return false;
    }
    switch (step.kind) {
      case 'ret':
        out.returns.push(step.address);
        break;
      case 'jmp':
      case 'jcc':
        if (step.target! < address || step.target! >= end) out.tailJumps.push(step.address);
        break;
      case 'jmp-indirect':
        out.tailJumps.push(step.address);
        break;
      case 'stop':
      case 'other':
        break;
      default:
        unreachable(step.kind, 'instruction kind');
    }
    return true;
  });
  return out;
}

// AArch64 encodings (Arm ARM, C6 "A64 base instruction descriptions").
const RET_MASK = 0xfffffc1f; // RET Xn: 1101011 0010 11111 000000 nnnnn 00000
const RET = 0xd65f0000;
const RETAA = 0xd65f0bff;
const RETAB = 0xd65f0fff;
const BR = 0xd61f0000; // BR Xn, same mask as RET
const BRA_MASK = 0xfefff800; // BRAA/BRAB/BRAAZ/BRABZ: 1101011 Z 0 0 0 11111 0000 1 M nnnnn mmmmm
const BRA = 0xd61f0800;

function scanAarch64(code: Uint8Array, address: bigint): ReturnScan {
  const out: ReturnScan = { returns: [], tailJumps: [] };
  if (address % 4n !== 0n) {
    out.undecodable = { address, reason: 'AArch64 code must start on a 4-byte boundary' };
    return out;
  }
  const end = address + BigInt(code.length);
  const view = new DataView(code.buffer, code.byteOffset, code.byteLength);
  const outside = (at: bigint, offset: number): boolean => {
    const target = at + BigInt(offset * 4);
    return target < address || target >= end;
  };
  for (let pos = 0; pos + 4 <= code.length; pos += 4) {
    const insn = view.getUint32(pos, true);
    const at = address + BigInt(pos);
    if ((insn & RET_MASK) >>> 0 === RET || insn === RETAA || insn === RETAB) {
      out.returns.push(at);
    } else if ((insn & RET_MASK) >>> 0 === BR || (insn & BRA_MASK) >>> 0 === BRA) {
      out.tailJumps.push(at);
    } else if ((insn & 0xfc000000) >>> 0 === 0x14000000) {
      if (outside(at, (insn << 6) >> 6)) out.tailJumps.push(at); // B imm26
    } else if ((insn & 0xff000010) >>> 0 === 0x54000000 || (insn & 0x7e000000) === 0x34000000) {
      if (outside(at, (insn << 8) >> 13)) out.tailJumps.push(at); // B.cond / CBZ / CBNZ imm19
    } else if ((insn & 0x7e000000) === 0x36000000) {
      if (outside(at, (insn << 13) >> 18)) out.tailJumps.push(at); // TBZ / TBNZ imm14
    }
  }
  // A trailing partial word is padding or a symbol size that is not a multiple of 4; neither hides a RET.
  return out;
}
