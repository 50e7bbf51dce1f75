// Forms gcc does not emit without split DWARF (clang does): strx1–4/strx, addrx1/addrx, rnglistx, loclistx,
// implicit_const, data16, indirect, ref_addr/ref_udata, and the unit bases declared after the strx-named
// attributes that depend on them. The sections are assembled here byte by byte, so the expected answers are
// known by construction; both 32- and 64-bit DWARF are checked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openDwarf } from '../../../../src/core/dwarf/index';
import { sectionsOf } from './objcopySections';
import { tool } from './oracle';

class Bytes {
  readonly b: number[] = [];
  get pos(): number {
    return this.b.length;
  }
  u8(...v: number[]): this {
    this.b.push(...v);
    return this;
  }
  uN(v: number, n: number): this {
    for (let i = 0; i < n; i++) this.b.push(Number((BigInt(v) >> BigInt(8 * i)) & 0xffn));
    return this;
  }
  uleb(v: number): this {
    do {
      let byte = v & 0x7f;
      v = Math.floor(v / 128);
      if (v) byte |= 0x80;
      this.b.push(byte);
    } while (v);
    return this;
  }
  sleb(v: number): this {
    for (;;) {
      const byte = v & 0x7f;
      v >>= 7;
      if ((v === 0 && !(byte & 0x40)) || (v === -1 && byte & 0x40)) return this.u8(byte);
      this.u8(byte | 0x80);
    }
  }
  str(s: string): this {
    return this.u8(...Buffer.from(s), 0);
  }
  patch(at: number, v: number, n: number): void {
    for (let i = 0; i < n; i++) this.b[at + i] = Number((BigInt(v) >> BigInt(8 * i)) & 0xffn);
  }
  done(): Uint8Array {
    return Uint8Array.from(this.b);
  }
}

function build(is64: boolean) {
  const off = is64 ? 8 : 4;
  // A section header starts with an initial length; returns the position to patch and the header end.
  const initial = (b: Bytes) => {
    if (is64) b.uN(0xffffffff, 4);
    const at = b.pos;
    b.uN(0, off);
    return at;
  };
  const close = (b: Bytes, at: number) => b.patch(at, b.pos - at - off, off);

  const strs = ['cu.c', '/src', 'fa', 'x', 'long', 'fb', 'v'];
  const str = new Bytes();
  const strOff = strs.map((s) => {
    const p = str.pos;
    str.str(s);
    return p;
  });
  const so = new Bytes();
  let at = initial(so);
  so.uN(5, 2).uN(0, 2);
  const strBase = so.pos;
  for (const o of strOff) so.uN(o, off);
  close(so, at);

  const addr = new Bytes();
  at = initial(addr);
  addr.uN(5, 2).u8(8, 0);
  const addrBase = addr.pos;
  for (const a of [0x401000, 0x402000, 0x403000]) addr.uN(a, 8);
  close(addr, at);

  const listHeader = (b: Bytes) => {
    const a = initial(b);
    b.uN(5, 2).u8(8, 0).uN(1, 4);
    return a;
  };
  const rl = new Bytes();
  at = listHeader(rl);
  const rlBase = rl.pos;
  rl.uN(off, off); // offsets[0]: the list right after the table
  rl.u8(1).uleb(1); // base_addressx → 0x402000
  rl.u8(4).uleb(0).uleb(0x10); // offset_pair
  rl.u8(3).uleb(2).uleb(0x20); // startx_length → 0x403000
  rl.u8(6).uN(0x500000, 8).uN(0x500010, 8); // start_end
  rl.u8(7).uN(0x600000, 8).uleb(0); // start_length of 0: empty, dropped
  rl.u8(0);
  close(rl, at);

  const ll = new Bytes();
  at = listHeader(ll);
  const llBase = ll.pos;
  ll.uN(off, off);
  ll.u8(1).uleb(0); // base_addressx → 0x401000
  ll.u8(4).uleb(0).uleb(4).uleb(1).u8(0x55); // [0x401000, 0x401004): DW_OP_reg5 (rdi)
  ll.u8(8).uN(0x401004, 8).uleb(0xc).uleb(2).u8(0x91).sleb(-20); // start_length: DW_OP_fbreg -20
  ll.u8(5).uleb(2).u8(0x37, 0x9f); // default_location: DW_OP_lit7; DW_OP_stack_value
  ll.u8(0);
  close(ll, at);

  const ab = new Bytes();
  const abbrev = (code: number, tag: number, children: boolean, attrs: Array<[number, number, number?]>) => {
    ab.uleb(code)
      .uleb(tag)
      .u8(children ? 1 : 0);
    for (const [a, f, c] of attrs) {
      ab.uleb(a).uleb(f);
      if (f === 0x21) ab.sleb(c!);
    }
    ab.u8(0, 0);
  };
  // CU: the strx name comes before str_offsets_base on purpose.
  abbrev(1, 0x11, true, [
    [0x03, 0x25],
    [0x72, 0x17],
    [0x73, 0x17],
    [0x74, 0x17],
    [0x8c, 0x17],
    [0x11, 0x01],
    [0x1b, 0x25],
    [0x13, 0x0b],
  ]);
  abbrev(2, 0x2e, true, [
    [0x03, 0x1a],
    [0x11, 0x29],
    [0x12, 0x06],
    [0x3f, 0x19],
    [0x3b, 0x21, 42],
    [0x49, 0x10],
    [0x40, 0x18],
  ]);
  abbrev(3, 0x05, false, [
    [0x03, 0x26],
    [0x49, 0x15],
    [0x02, 0x22],
  ]);
  abbrev(4, 0x24, false, [
    [0x03, 0x27],
    [0x3e, 0x0b],
    [0x0b, 0x21, 8],
  ]);
  abbrev(5, 0x2e, false, [
    [0x03, 0x28],
    [0x55, 0x23],
    [0x3b, 0x16],
  ]);
  abbrev(6, 0x34, false, [
    [0x03, 0x25],
    [0x1c, 0x1e],
    [0x49, 0x13],
    [0x02, 0x18],
  ]);
  ab.u8(0);

  const info = new Bytes();
  at = initial(info);
  info.uN(5, 2).u8(1, 8).uN(0, off);
  info.uleb(1).u8(0).uN(strBase, off).uN(addrBase, off).uN(rlBase, off).uN(llBase, off).uN(0, 8).u8(1).u8(0x1d);
  const longAt = info.pos;
  info.uleb(4).uN(4, 3).u8(5);
  info.uleb(2).uleb(2).u8(0).uN(0x30, 4).uN(longAt, off).uleb(1).u8(0x9c);
  const xAt = info.pos;
  info.uleb(3).uN(3, 2).uleb(longAt).uleb(0);
  const vAt = info.pos;
  info
    .uleb(6)
    .u8(6)
    .u8(...Array(16).fill(0xab))
    .uN(longAt, 4)
    .uleb(2)
    .u8(0x91)
    .sleb(-24);
  info.u8(0);
  info.uleb(5).uN(5, 4).uleb(0).uleb(0x0f).uleb(7); // decl_line through DW_FORM_indirect → udata
  info.u8(0);
  close(info, at);

  const sections = new Map<string, Uint8Array>([
    ['.debug_info', info.done()],
    ['.debug_abbrev', ab.done()],
    ['.debug_str', str.done()],
    ['.debug_str_offsets', so.done()],
    ['.debug_addr', addr.done()],
    ['.debug_rnglists', rl.done()],
    ['.debug_loclists', ll.done()],
  ]);
  return { src: { littleEndian: true, addressSize: 8 as const, section: (n: string) => sections.get(n) }, xAt, vAt, longAt };
}

for (const is64 of [false, true]) {
  test(`DWARF 5 ${is64 ? '64' : '32'}-bit: indexed strings, addresses, range and location lists resolve through the unit bases`, () => {
    const { src, xAt, vAt } = build(is64);
    const dw = openDwarf(src, 'x86_64');
    assert.equal(dw.units()[0].name, 'cu.c');
    assert.equal(dw.units()[0].compDir, '/src');
    const fns = dw.functions();
    assert.deepEqual(
      fns.map((f) => f.name),
      ['fa', 'fb'],
    );
    const [fa, fb] = fns;
    assert.equal(fa.entryPc, 0x401000);
    assert.deepEqual(fa.ranges, [0x401000, 0x401030]);
    assert.equal(fa.line, 42);
    assert.equal(fa.external, true);
    assert.equal(fa.probeable, true);
    assert.deepEqual(
      fa.params.map((p) => [p.name, dw.typeName(p.typeOffset), p.dieOffset]),
      [['x', 'long', xAt]],
    );
    assert.deepEqual(dw.typeOf(fa.params[0].typeOffset), {
      offset: fa.params[0].typeOffset,
      kind: 'base',
      name: 'long',
      byteSize: 8,
      targetOffset: undefined,
      signed: true,
      float: false,
      bool: false,
      char: false,
    });
    assert.deepEqual(dw.frameBase(fa), { kind: 'cfa', offset: 0 });
    assert.deepEqual(fb.ranges, [0x402000, 0x402010, 0x403000, 0x403020, 0x500000, 0x500010]);
    assert.equal(fb.entryPc, 0x402000);
    assert.equal(fb.line, 7);

    assert.deepEqual(dw.locationOf(xAt, 0x401000), { kind: 'register', reg: 5, name: 'rdi' });
    assert.deepEqual(dw.locationOf(xAt, 0x401003), { kind: 'register', reg: 5, name: 'rdi' });
    assert.deepEqual(dw.locationOf(xAt, 0x401004), { kind: 'fbreg', offset: -20 });
    assert.deepEqual(dw.locationOf(xAt, 0x40100f), { kind: 'fbreg', offset: -20 });
    assert.deepEqual(dw.locationOf(xAt, 0x401010), { kind: 'value', value: 7 });
    const vars = dw.variablesAt(fa.dieOffset, 0x401008);
    assert.deepEqual(
      vars.map((v) => [v.kind, v.type, v.name, v.location, v.dieOffset]),
      [
        ['param', 'long', 'x', { kind: 'fbreg', offset: -20 }, xAt],
        ['local', 'long', 'v', { kind: 'fbreg', offset: -24 }, vAt],
      ],
    );
  });
}

test('a unit cut short anywhere (its length field agreeing) gives a DwarfFormatError or a shorter, sane answer', () => {
  const { src } = build(false);
  const full = src.section('.debug_info')!;
  let typed = 0;
  const quiet: number[] = [];
  for (let n = 12; n < full.length; n++) {
    const cut = full.slice(0, n);
    new DataView(cut.buffer).setUint32(0, n - 4, true);
    const dw = openDwarf({ ...src, section: (s: string) => (s === '.debug_info' ? cut : src.section(s)) }, 'x86_64');
    try {
      const fns = dw.functions();
      for (const f of fns) dw.variablesAt(f.dieOffset, f.entryPc ?? 0);
      // A cut between two top-level DIEs loses only the unit's closing null, which producers may omit: what
      // was read must be an exact prefix of the full answer.
      assert.deepEqual(
        fns.map((f) => f.name),
        ['fa', 'fb'].slice(0, fns.length),
        `cut at ${n}`,
      );
      quiet.push(n);
    } catch (e) {
      assert.equal((e as Error).name, 'DwarfFormatError', `cut at ${n}: ${(e as Error).stack}`);
      assert.match((e as Error).message, /\.debug_info at offset 0x[0-9a-f]+/);
      typed++;
    }
  }
  // Only the four top-level DIE boundaries (after the root, the base type, fa's subtree, fb) are quiet.
  assert.equal(quiet.length, 4, `quiet cuts: ${quiet}`);
  assert.ok(typed > 40);
});

test('type units (-fdebug-types-section, DWARF 4 .debug_types and DWARF 5 DW_UT_type) answer like plain DWARF', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pl-dwarf-tu-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const src = resolve(__dirname, '../../../fixtures/src/cpp/cpp.cpp');
  const answers: string[][] = [];
  const shapes: string[] = [];
  for (const flags of [['-gdwarf-4'], ['-gdwarf-4', '-fdebug-types-section'], ['-gdwarf-5', '-fdebug-types-section']]) {
    const out = join(dir, flags.join('').replace(/\W/g, ''));
    if (tool(t, 'g++', [...flags, '-O0', '-o', out, src]) === undefined) return;
    const s = sectionsOf(out);
    if (flags.includes('-fdebug-types-section') && flags.includes('-gdwarf-4')) assert.ok(s.sections.has('.debug_types'));
    const dw = openDwarf(s, 'x86_64');
    answers.push(
      dw
        .functions()
        .map((f) => `${f.name}(${f.params.map((p) => `${dw.typeName(p.typeOffset)} ${p.name}`).join(', ')})`)
        .sort(),
    );
    const add = dw.functions().find((f) => f.name === 'probelens::shapes::Counter::add')!;
    const self = dw.typeOf(dw.typeOf(add.params[0].typeOffset).targetOffset);
    assert.equal(self.kind, 'pointer');
    const cls = dw.typeOf(self.targetOffset);
    assert.ok(cls.members && cls.members.length > 0, `${flags}: members of ${cls.name}`);
    shapes.push(JSON.stringify(cls.members.map((m) => [m.name, m.type, m.offset])));
  }
  assert.deepEqual(answers[1], answers[0]);
  assert.deepEqual(answers[2], answers[0]);
  assert.deepEqual(new Set(shapes).size, 1, shapes.join('\n'));
  assert.ok(
    answers[0].includes('probelens::shapes::Counter::add(probelens::shapes::Counter * const this, int delta)'),
    answers[0].join('\n'),
  );
});
