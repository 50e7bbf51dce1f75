// The raw BTF parser (src/core/binary/btf.ts): this machine's own /sys/kernel/btf/vmlinux (do_sys_openat2's
// prototype as fs/open.c and include/uapi/linux/openat2.h declare it), a crafted blob holding every kind, and
// truncated, garbled and cyclic bytes, which must end in a BtfError and never in a hang or an out-of-range read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { Btf, BtfError, parseBtf } from '../../../../src/core/binary/btf';
import { BtfBuilder } from '../../../helpers/btfBuilder';
import { missing } from '../../../helpers/require';

const SYS_BTF = '/sys/kernel/btf/vmlinux';

function machineBtf(t: Parameters<typeof missing>[0]): Uint8Array | undefined {
  if (!existsSync(SYS_BTF)) {
    missing(t, `${SYS_BTF} (a kernel with CONFIG_DEBUG_INFO_BTF)`);
    return undefined;
  }
  return new Uint8Array(readFileSync(SYS_BTF));
}

test("this machine's vmlinux BTF: do_sys_openat2(int dfd, const char *filename, struct open_how *how), flags at offset 0, u64", (t) => {
  const bytes = machineBtf(t);
  if (!bytes) return;
  const start = process.hrtime.bigint();
  const btf = parseBtf(bytes);
  const [id] = btf.funcs('do_sys_openat2');
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  t.diagnostic(`${btf.count} types, parsed and the function found in ${ms.toFixed(0)} ms`);
  assert.ok(btf.count > 10_000);
  const fn = btf.type(id);
  assert.equal(fn.kind, 'func');
  if (fn.kind !== 'func') return;
  const proto = btf.type(fn.type);
  assert.equal(proto.kind, 'func_proto');
  if (proto.kind !== 'func_proto') return;
  assert.deepEqual(
    proto.params.map((p) => p.name),
    ['dfd', 'filename', 'how'],
  );
  const dfd = btf.resolve(proto.params[0].type).type;
  assert.deepEqual([dfd.kind, 'size' in dfd && dfd.size, 'signed' in dfd && dfd.signed], ['int', 4, true]);
  // filename: a pointer to const char.
  const filename = btf.type(proto.params[1].type);
  assert.equal(filename.kind, 'ptr');
  if (filename.kind !== 'ptr') return;
  const pointee = btf.type(filename.type);
  assert.equal(pointee.kind, 'const');
  const ch = btf.resolve(filename.type).type;
  assert.equal(ch.kind === 'int' && ch.name, 'char');
  assert.equal(ch.kind === 'int' && ch.size, 1);
  // how: a pointer to struct open_how { __u64 flags; __u64 mode; __u64 resolve; }.
  const how = btf.type(proto.params[2].type);
  assert.equal(how.kind, 'ptr');
  if (how.kind !== 'ptr') return;
  const s = btf.resolve(how.type).type;
  assert.equal(s.kind, 'struct');
  if (s.kind !== 'struct') return;
  assert.equal(s.name, 'open_how');
  assert.equal(s.size, 24);
  assert.deepEqual(
    s.members.map((m) => [m.name, m.bitOffset / 8, btf.sizeOf(m.type)]),
    [
      ['flags', 0, 8],
      ['mode', 8, 8],
      ['resolve', 16, 8],
    ],
  );
  const flags = btf.resolve(s.members[0].type).type;
  assert.equal(flags.kind === 'int' && flags.signed, false, '__u64 is unsigned');
  assert.ok(ms < 5_000, `parsed in ${ms} ms`);
  // Every type of the real file decodes (and names resolve) without an error.
  for (let i = 1; i <= btf.count; i++) btf.type(i);
  assert.deepEqual(btf.funcs('no_such_function_pl'), []);
});

function everyKind(): { bytes: Uint8Array; ids: Record<string, number> } {
  const b = new BtfBuilder();
  const ids: Record<string, number> = {};
  ids.int = b.int('int', 4, true);
  ids.uchar = b.int('unsigned char', 1, false, { char: true });
  ids.bool = b.int('_Bool', 1, false, { bool: true });
  ids.user = b.ref('type_tag', ids.uchar, 'user');
  ids.constUser = b.ref('const', ids.user);
  ids.ptr = b.ptr(ids.constUser);
  ids.arr = b.array(ids.int, ids.int, 16);
  ids.s = b.struct('s', 16, [
    { name: 'a', type: ids.int, bitOffset: 0, bitSize: 0 },
    { name: 'b', type: ids.int, bitOffset: 35, bitSize: 3 },
    { name: 'c', type: ids.ptr, bitOffset: 64, bitSize: 0 },
  ]);
  ids.u = b.struct('u', 8, [{ name: 'x', type: ids.int, bitOffset: 0 }], true);
  ids.e = b.enum('e', 4, true, [
    ['NEG', -1],
    ['ONE', 1],
  ]);
  ids.e64 = b.enum64('e64', false, [['BIG', (1n << 63n) + 5n]]);
  ids.fwd = b.fwd('later', true);
  ids.td = b.ref('typedef', ids.s, 's_t');
  ids.vol = b.ref('volatile', ids.td);
  ids.restrict = b.ref('restrict', ids.ptr);
  ids.proto = b.proto(ids.int, [
    ['p', ids.restrict],
    ['', 0],
  ]);
  ids.func = b.func('f', ids.proto, 1);
  ids.var = b.variable('v', ids.int, 1);
  ids.sec = b.datasec('.data', 4, [[ids.var, 0, 4]]);
  ids.float = b.float('double', 8);
  ids.tag = b.declTag('tagged', ids.func, 0);
  return { bytes: b.bytes(), ids };
}

test('a crafted blob with every kind decodes: bitfields, signed enums, enum64 beyond 2^53, variadic prototypes, type tags', () => {
  const { bytes, ids } = everyKind();
  const btf = Btf.parse(bytes);
  assert.equal(btf.count, Object.keys(ids).length);
  assert.deepEqual(btf.type(ids.uchar), {
    kind: 'int',
    id: ids.uchar,
    name: 'unsigned char',
    size: 1,
    signed: false,
    char: true,
    bool: false,
    bitOffset: 0,
    bits: 8,
  });
  assert.equal((btf.type(ids.bool) as { bool: boolean }).bool, true);
  assert.deepEqual(btf.type(ids.arr), { kind: 'array', id: ids.arr, type: ids.int, indexType: ids.int, nelems: 16 });
  assert.equal(btf.sizeOf(ids.arr), 64);
  const s = btf.type(ids.s);
  assert.equal(s.kind, 'struct');
  assert.deepEqual(s.kind === 'struct' && s.members, [
    { name: 'a', type: ids.int, bitOffset: 0, bitSize: 0 },
    { name: 'b', type: ids.int, bitOffset: 35, bitSize: 3 },
    { name: 'c', type: ids.ptr, bitOffset: 64, bitSize: 0 },
  ]);
  assert.equal(btf.type(ids.u).kind, 'union');
  const e = btf.type(ids.e);
  assert.deepEqual(e.kind === 'enum' && e.values, [
    { name: 'NEG', value: -1n },
    { name: 'ONE', value: 1n },
  ]);
  const e64 = btf.type(ids.e64);
  assert.deepEqual(e64.kind === 'enum' && e64.values, [{ name: 'BIG', value: (1n << 63n) + 5n }]);
  assert.deepEqual(btf.type(ids.fwd), { kind: 'fwd', id: ids.fwd, name: 'later', union: true });
  // Typedefs and qualifiers resolve to the struct; the pointer's pointee carries the `user` tag.
  assert.equal(btf.resolve(ids.vol).type.id, ids.s);
  assert.equal(btf.sizeOf(ids.vol), 16);
  const ptr = btf.resolve(ids.restrict).type;
  assert.equal(ptr.kind, 'ptr');
  assert.deepEqual(btf.resolve(ptr.kind === 'ptr' ? ptr.type : 0).tags, ['user']);
  const proto = btf.type(ids.proto);
  assert.deepEqual(proto.kind === 'func_proto' && [proto.params, proto.variadic], [[{ name: 'p', type: ids.restrict }], true]);
  assert.deepEqual(btf.funcs('f'), [ids.func]);
  assert.deepEqual(btf.type(ids.func), { kind: 'func', id: ids.func, name: 'f', type: ids.proto, linkage: 1 });
  assert.deepEqual(btf.type(ids.var), { kind: 'var', id: ids.var, name: 'v', type: ids.int, linkage: 1 });
  assert.deepEqual(btf.type(ids.sec), {
    kind: 'datasec',
    id: ids.sec,
    name: '.data',
    size: 4,
    vars: [{ type: ids.var, offset: 0, size: 4 }],
  });
  assert.deepEqual(btf.type(ids.float), { kind: 'float', id: ids.float, name: 'double', size: 8 });
  assert.deepEqual(btf.type(ids.tag), { kind: 'decl_tag', id: ids.tag, name: 'tagged', type: ids.func, componentIdx: 0 });
  assert.throws(() => btf.type(btf.count + 1), BtfError);
});

/** Every way to read `bytes` as BTF: parse, then decode every type, resolve it and look a function up. */
function readAll(bytes: Uint8Array): void {
  const btf = Btf.parse(bytes);
  for (let i = 1; i <= btf.count; i++) {
    btf.type(i);
    btf.resolve(i);
    btf.sizeOf(i);
  }
  btf.funcs('f');
}

const onlyBtfErrors = (bytes: Uint8Array, what: string) => {
  try {
    readAll(bytes);
  } catch (e) {
    assert.ok(e instanceof BtfError, `${what}: ${(e as Error).stack}`);
  }
};

test('every truncation of a blob is refused with a BtfError naming what is cut', () => {
  const { bytes } = everyKind();
  for (let n = 0; n < bytes.length; n++) assert.throws(() => readAll(bytes.subarray(0, n)), BtfError, `cut at ${n}`);
  assert.throws(() => Btf.parse(bytes.subarray(0, 10)), /shorter than the 24-byte header/);
  assert.throws(() => Btf.parse(bytes.subarray(0, bytes.length - 1)), /runs past the end .*truncated/);
});

test('the real BTF cut short is refused, not read past its end', (t) => {
  const bytes = machineBtf(t);
  if (!bytes) return;
  for (const n of [23, 24, 1000, bytes.length >> 1, bytes.length - 1])
    assert.throws(() => Btf.parse(bytes.subarray(0, n)), BtfError, `cut at ${n}`);
});

test('garbled bytes (a bad magic, version, kind, section bounds, string offsets, random flips) end in BtfError only', () => {
  const { bytes } = everyKind();
  const at = (off: number, v: number) => {
    const b = bytes.slice();
    new DataView(b.buffer).setUint32(off, v, true);
    return b;
  };
  assert.throws(() => Btf.parse(at(0, 0x1234)), /bad magic/);
  const v2 = bytes.slice();
  v2[2] = 2;
  assert.throws(() => Btf.parse(v2), /unsupported version 2/);
  assert.throws(() => Btf.parse(at(4, 0xffffffff)), /header length/);
  assert.throws(() => Btf.parse(at(12, 0xfffffff0)), /type section/);
  assert.throws(() => Btf.parse(at(20, 0xfffffff0)), /string section/);
  // The first type's kind set to 31 (no such kind).
  assert.throws(() => Btf.parse(at(24 + 4, 31 << 24)), /unknown kind 31/);
  // The first type's name offset past the strings.
  assert.throws(() => Btf.parse(at(24, 0xffffff)).type(1), /string offset/);
  // A vlen so large the members run past the section.
  assert.throws(() => Btf.parse(at(24 + 4, (4 << 24) | 0xffff)), /runs past the end of the type section/);
  // Random flips: whatever happens is a BtfError or a successful read.
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24);
  for (let i = 0; i < 3000; i++) {
    const b = bytes.slice();
    for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
    onlyBtfErrors(b, `flip ${i}`);
  }
});

test('a typedef cycle and a type id out of range end in BtfError, not a hang', () => {
  const b = new BtfBuilder();
  const a = b.ref('typedef', 0, 'a');
  const c = b.ref('typedef', a, 'c');
  b.patchRef(a, c);
  const p = b.ptr(99);
  const btf = Btf.parse(b.bytes());
  assert.throws(() => btf.resolve(a), /cycle/);
  assert.throws(() => btf.sizeOf(c), /cycle/);
  assert.throws(() => btf.resolve(btf.type(p).kind === 'ptr' ? 99 : 0), /not among the 3 types/);
});

test("a module's split BTF is read against its base: its ids follow the base's, its strings follow the base's, and both are reachable", () => {
  const base = new BtfBuilder();
  const int = base.int('int', 4, true);
  const sock = base.struct('socket', 16, [{ name: 'type', type: int, bitOffset: 0 }]);
  const sockPtr = base.ptr(sock);
  base.func('sock_create', base.proto(int, [['family', int]]));
  const baseBytes = base.bytes();
  const mod = new BtfBuilder(base);
  // The module's own struct, a pointer to the base's struct, and a function mixing both.
  const priv = mod.struct('pfkey_sock', 24, [
    { name: 'sk', type: sockPtr, bitOffset: 0 },
    { name: 'registered', type: int, bitOffset: 64 },
  ]);
  const privPtr = mod.ptr(priv);
  const fn = mod.func(
    'pfkey_create',
    mod.proto(int, [
      ['sock', sockPtr],
      ['protocol', int],
      ['kern', int],
      ['pk', privPtr],
    ]),
  );
  const modBytes = mod.bytes();

  const b = parseBtf(baseBytes);
  const m = parseBtf(modBytes, b);
  assert.equal(m.firstId, b.count + 1);
  assert.equal(priv, b.count + 1, 'the builder numbers split ids after the base');
  assert.equal(m.count, b.count + 4);
  // The module's header-relative string offsets start where the base's string section ends.
  assert.equal(m.stringStart, b.stringEnd);
  assert.deepEqual(m.funcs('pfkey_create'), [fn]);
  assert.deepEqual(m.funcs('sock_create'), [], "a split BTF lists its own functions, not its base's");
  const f = m.type(fn);
  assert.equal(f.kind, 'func');
  const proto = m.type((f as { type: number }).type);
  assert.ok(proto.kind === 'func_proto');
  assert.deepEqual(
    proto.params.map((p) => `${m.typeName(p.type)} ${p.name}`),
    ['struct socket * sock', 'int protocol', 'int kern', 'struct pfkey_sock * pk'],
  );
  const s = m.type(priv);
  assert.ok(s.kind === 'struct');
  assert.deepEqual(
    s.members.map((x) => `${m.typeName(x.type)} ${x.name}@${x.bitOffset}`),
    ['struct socket * sk@0', 'int registered@64'],
  );
  assert.equal(m.sizeOf(priv), 24);
  assert.equal(m.kindOf(int), b.kindOf(int));
  // Read alone, the same bytes cannot name the base's types or strings: refused, not misread.
  assert.throws(() => {
    const alone = parseBtf(modBytes);
    alone.typeName(alone.funcs('pfkey_create')[0] ?? 1);
    alone.str(b.stringEnd + 100000);
  }, BtfError);
  assert.throws(() => m.type(m.count + 1), BtfError);
  assert.throws(() => m.str(m.stringEnd + 1), BtfError);
});
