// The CFA (canonical frame address) at a pc, from .eh_frame (or .debug_frame) call-frame information. DWARF
// describes most locals relative to the frame base, which gcc and clang define as DW_OP_call_frame_cfa; a
// uprobe can only fetch relative to a register, so a line probe needs "CFA = reg + offset" at its address.
// Only the CFA rule is interpreted (register save rules are skipped); CFA expressions are reported as such.
// Reference: DWARF 5 §6.4, and the LSB's .eh_frame description (CIE id 0, pc-relative pointer encodings).
import { ByteReader, type FormatErrorOf } from '../binary/byteReader';
import { readFoldedAddress } from '../binary/addressFold';

export interface CfaRule {
  /** DWARF register number. */
  reg: number;
  offset: number;
}

export class CfiError extends Error {
  constructor(section: string, offset: number, detail: string) {
    super(`${section} at offset 0x${offset.toString(16)}: ${detail}`);
    this.name = 'CfiError';
  }
}

interface Cie {
  codeAlign: number;
  dataAlign: number;
  fdeEncoding: number;
  /** Augmentation string starts with 'z' (FDEs then carry an augmentation length). */
  z: boolean;
  initial: Uint8Array;
}

interface Fde {
  lo: number;
  hi: number;
  cie: Cie;
  instructions: Uint8Array;
}

const cfiError: FormatErrorOf = (section, offset, detail) => new CfiError(section, offset, detail);

function cursor(bytes: Uint8Array, le: boolean, section: string, start = 0, end = bytes.length): ByteReader {
  return new ByteReader(bytes, le, section, cfiError, start, end);
}

export class CallFrameInfo {
  private fdes: Fde[] = [];

  /**
   * @param bytes section contents; @param sectionAddr its link-time address (for pc-relative pointers);
   * @param ehFrame true for .eh_frame (CIE id 0, augmentations), false for .debug_frame.
   */
  constructor(
    readonly bytes: Uint8Array,
    readonly sectionAddr: number,
    readonly addressSize: 4 | 8,
    readonly le: boolean,
    readonly ehFrame: boolean,
  ) {
    this.parse();
  }

  private parse(): void {
    const name = this.ehFrame ? '.eh_frame' : '.debug_frame';
    const cies = new Map<number, Cie>();
    let pos = 0;
    for (let n = 0; pos + 4 <= this.bytes.length; n++) {
      if (n > 5_000_000) throw new CfiError(name, pos, 'too many entries');
      const start = pos;
      const c = cursor(this.bytes, this.le, name, pos);
      let len = c.u32();
      let is64 = false;
      if (len === 0) {
        if (this.ehFrame) break; // terminator
        pos = c.pos;
        continue;
      }
      if (len === 0xffffffff) {
        len = c.u64();
        is64 = true;
      }
      const bodyStart = c.pos;
      const end = bodyStart + len;
      if (end > this.bytes.length) throw new CfiError(name, start, 'entry runs past the end of the section');
      const idPos = c.pos;
      const id = is64 ? c.u64() : c.u32();
      // A 64-bit CIE id of all ones reads as 2^64 through Number(); that is still exact enough to compare.
      const isCie = this.ehFrame ? id === 0 : id === (is64 ? 2 ** 64 : 0xffffffff);
      const body = cursor(this.bytes, this.le, name, c.pos, end);
      if (isCie) cies.set(start, this.parseCie(body));
      else {
        const ciePos = this.ehFrame ? idPos - id : id;
        let cie = cies.get(ciePos);
        if (!cie) {
          // .debug_frame may place a CIE after its FDEs; parse it where it is.
          cie = this.cieAt(ciePos, name);
          cies.set(ciePos, cie);
        }
        // .debug_frame's addresses are absolute and address-sized: a kernel's are folded as DWARF's are.
        const lo = this.ehFrame
          ? body.encodedPointer(cie.fdeEncoding, this.addressSize, this.sectionAddr)
          : readFoldedAddress(body, this.addressSize);
        const range = body.encodedPointer(cie.fdeEncoding & 0x0f, this.addressSize, this.sectionAddr);
        if (this.ehFrame && cie.z) body.pos += body.uleb();
        this.fdes.push({ lo, hi: lo + range, cie, instructions: this.bytes.subarray(body.pos, end) });
      }
      pos = end;
    }
    this.fdes.sort((a, b) => a.lo - b.lo);
  }

  private cieAt(at: number, name: string): Cie {
    const c = cursor(this.bytes, this.le, name, at);
    let len = c.u32();
    let is64 = false;
    if (len === 0xffffffff) {
      len = c.u64();
      is64 = true;
    }
    const end = c.pos + len;
    if (end > this.bytes.length) throw new CfiError(name, at, 'CIE runs past the end of the section');
    if (is64) c.u64();
    else c.u32();
    return this.parseCie(cursor(this.bytes, this.le, name, c.pos, end));
  }

  private parseCie(c: ByteReader): Cie {
    const version = c.u8();
    const aug = c.cstr();
    if (!this.ehFrame && version >= 4) {
      c.u8();
      c.u8();
    } // address_size, segment_selector_size
    const codeAlign = c.uleb();
    const dataAlign = c.sleb();
    if (version === 1) c.u8();
    else c.uleb(); // return address register
    let fdeEncoding = this.addressSize === 8 ? 0x04 : 0x03; // absolute, address-sized
    let z = false;
    if (aug.startsWith('z')) {
      z = true;
      const augLen = c.uleb();
      const augEnd = c.pos + augLen;
      for (const ch of aug.slice(1)) {
        if (ch === 'R') fdeEncoding = c.u8();
        else if (ch === 'L') c.u8();
        else if (ch === 'P') {
          const enc = c.u8();
          c.encodedPointer(enc, this.addressSize, this.sectionAddr);
        } else if (ch === 'S' || ch === 'B' || ch === 'G') continue;
        else break; // unknown augmentation: the length lets us skip the rest
      }
      c.pos = augEnd;
    } else if (aug === 'eh') {
      c.pos += this.addressSize;
    }
    return { codeAlign, dataAlign, fdeEncoding, z, initial: this.bytes.subarray(c.pos, c.end) };
  }

  /** The CFA rule in force at `pc`, undefined when no FDE covers it or a DWARF expression computes it. */
  cfaAt(pc: number): CfaRule | undefined {
    let lo = 0,
      hi = this.fdes.length - 1,
      found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.fdes[mid].lo <= pc) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0) return undefined;
    const fde = this.fdes[found];
    if (pc >= fde.hi) return undefined;
    const state: { rule: CfaRule | 'expr' } = { rule: { reg: -1, offset: 0 } };
    const name = this.ehFrame ? '.eh_frame' : '.debug_frame';
    run(fde.cie.initial, fde.cie, state, Infinity, fde.lo, this, name);
    run(fde.instructions, fde.cie, state, pc, fde.lo, this, name);
    // A CFA computed by a DWARF expression (GCC's stack realignment through a DRAP register, as in the kernel's
    // functions that align their stack) is not evaluated: the CFA is unknown there, like a pc no FDE covers, so
    // what is located relative to it is unavailable at that pc and nothing else fails.
    if (state.rule === 'expr') return undefined;
    return state.rule.reg >= 0 ? state.rule : undefined;
  }
}

function run(
  ins: Uint8Array,
  cie: Cie,
  state: { rule: CfaRule | 'expr' },
  pc: number,
  start: number,
  cfi: CallFrameInfo,
  name: string,
): void {
  const c = cursor(ins, cfi.le, name);
  const stack: Array<CfaRule | 'expr'> = [];
  let loc = start;
  const set = (reg: number, offset: number) => {
    state.rule = { reg, offset };
  };
  while (c.pos < ins.length) {
    const op = c.u8();
    const hi2 = op & 0xc0;
    const low = op & 0x3f;
    if (hi2 === 0x40) {
      loc += low * cie.codeAlign;
      if (loc > pc) return;
      continue;
    } // advance_loc
    if (hi2 === 0x80) {
      c.uleb();
      continue;
    } // offset
    if (hi2 === 0xc0) continue; // restore
    switch (op) {
      case 0x00:
        break; // nop
      case 0x01:
        loc = readFoldedAddress(c, cfi.addressSize);
        if (loc > pc) return;
        break; // set_loc
      case 0x02:
        loc += c.u8() * cie.codeAlign;
        if (loc > pc) return;
        break;
      case 0x03:
        loc += c.u16() * cie.codeAlign;
        if (loc > pc) return;
        break;
      case 0x04:
        loc += c.u32() * cie.codeAlign;
        if (loc > pc) return;
        break;
      case 0x05:
        c.uleb();
        c.uleb();
        break; // offset_extended
      case 0x06:
      case 0x07:
      case 0x08:
        c.uleb();
        break; // restore_extended, undefined, same_value
      case 0x09:
        c.uleb();
        c.uleb();
        break; // register
      case 0x0a:
        stack.push(state.rule === 'expr' ? 'expr' : { ...state.rule });
        break; // remember_state
      case 0x0b: {
        const s = stack.pop();
        if (s) state.rule = s;
        break;
      } // restore_state
      case 0x0c:
        set(c.uleb(), c.uleb());
        break; // def_cfa
      case 0x0d: {
        const r = c.uleb();
        set(r, state.rule === 'expr' ? 0 : state.rule.offset);
        break;
      } // def_cfa_register
      case 0x0e: {
        const o = c.uleb();
        if (state.rule !== 'expr') state.rule = { reg: state.rule.reg, offset: o };
        break;
      } // def_cfa_offset
      case 0x0f:
        c.pos += c.uleb();
        state.rule = 'expr';
        break; // def_cfa_expression
      case 0x10:
        c.uleb();
        c.pos += c.uleb();
        break; // expression
      case 0x11:
        c.uleb();
        c.sleb();
        break; // offset_extended_sf
      case 0x12:
        set(c.uleb(), c.sleb() * cie.dataAlign);
        break; // def_cfa_sf
      case 0x13: {
        const o = c.sleb() * cie.dataAlign;
        if (state.rule !== 'expr') state.rule = { reg: state.rule.reg, offset: o };
        break;
      } // def_cfa_offset_sf
      case 0x14:
        c.uleb();
        c.uleb();
        break; // val_offset
      case 0x15:
        c.uleb();
        c.sleb();
        break; // val_offset_sf
      case 0x16:
        c.uleb();
        c.pos += c.uleb();
        break; // val_expression
      case 0x2d:
        break; // GNU_window_save / AArch64 negate_ra_state
      case 0x2e:
        c.uleb();
        break; // GNU_args_size
      case 0x2f:
        c.uleb();
        c.uleb();
        break; // GNU_negative_offset_extended
      default:
        throw new CfiError(name, c.pos - 1, `unknown call frame instruction 0x${op.toString(16)}`);
    }
    if (c.pos > ins.length) throw new CfiError(name, c.pos, 'instruction runs past the end');
  }
}
