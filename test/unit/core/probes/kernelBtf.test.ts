// Kernel probes from BTF and kallsyms, no vmlinux (src/core/probes/kernelBtf.ts): parameters by name as `$argN`,
// members through pointers (and embedded structs) at their BTF offsets, user memory where a type tag says so, the
// return with the prototype's type; and what kallsyms or the blacklist refuse before anything is written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { Btf } from '../../../../src/core/binary/btf';
import { formatDefinition } from '../../../../src/core/probes/definition';
import { CompileError } from '../../../../src/core/probes/sites';
import {
  btfFunction,
  compileKernelBtf,
  kernelSourceLines,
  NO_INLINED_NOTE,
  parseFilterFunctions,
  parseKallsyms,
  parseKprobeBlacklist,
  type RunningKernel,
} from '../../../../src/core/probes/kernelBtf';
import { BtfBuilder } from '../../../helpers/btfBuilder';
import { missing } from '../../../helpers/require';

const SYS_BTF = '/sys/kernel/btf/vmlinux';
let machine: Btf | undefined;

function machineKernel(t: Parameters<typeof missing>[0], kallsyms = KALLSYMS, blacklist = BLACKLIST): RunningKernel | undefined {
  if (!existsSync(SYS_BTF)) {
    missing(t, `${SYS_BTF} (a kernel with CONFIG_DEBUG_INFO_BTF)`);
    return undefined;
  }
  machine ??= Btf.parse(readFileSync(SYS_BTF));
  return { btf: machine, kallsyms: parseKallsyms(kallsyms), blacklist: parseKprobeBlacklist(blacklist) };
}

const KALLSYMS = [
  'ffffffff81234560 T do_sys_openat2',
  'ffffffff81234000 t vfs_open',
  'ffffffff81200000 t dup_static',
  'ffffffff81300000 t dup_static',
  'ffffffff82000000 D jiffies',
  'ffffffff81100000 t do_int3',
  'ffffffffc0001000 t ext4_fn\t[ext4]',
  '0000000000000000 T hidden_address',
].join('\n');
const BLACKLIST = ['0xffffffff81100000-0xffffffff81100080\tdo_int3', '0xffffffff81100000 0xffffffff81100080\tdo_int3'].join('\n');

const defs = (probes: ReturnType<typeof compileKernelBtf>) => probes.map((p) => formatDefinition(p.definition));

test('do_sys_openat2 dfd filename:ustring how->flags and its %return $retval, from the BTF, by $argN, no vmlinux', (t) => {
  const k = machineKernel(t);
  if (!k) return;
  const probes = compileKernelBtf(['do_sys_openat2 dfd filename:ustring how->flags', 'do_sys_openat2%return $retval'], k, {
    group: 'probelens_1_t',
  });
  const [entry, ret] = defs(probes);
  assert.equal(
    entry,
    'p:probelens_1_t/do_sys_openat2 do_sys_openat2 dfd=$arg1:s32 filename=+0($arg2):ustring how_flags=+0($arg3):u64 probelens_comm=$comm:string',
  );
  // Linux 6.1 returns long, later ones int: the prototype's type either way.
  assert.match(ret, /^r:probelens_1_t\/do_sys_openat2_return do_sys_openat2 retval=\$retval:s(32|64) probelens_comm=\$comm:string$/);
  for (const p of probes) {
    assert.equal(p.kernelSource, 'btf');
    assert.equal(p.address, 0xffffffff81234560n, 'the address kallsyms gave, exact beyond 2^53');
  }
  assert.equal(probes[0].pairKey, probes[1].pairKey, 'entry and return pair for latency');
  // Said once per function: where it came from, and that inlined copies are not armed.
  assert.deepEqual(kernelSourceLines([...probes, { function: 'vfs_read', kernelSource: 'dwarf' }, { function: 'main' }]), [
    `do_sys_openat2: from the target's BTF and kallsyms (no vmlinux); ${NO_INLINED_NOTE}`,
    'vfs_read: from vmlinux DWARF',
  ]);
  assert.deepEqual(
    probes[0].args.filter((a) => !a.hidden).map((a) => [a.name, a.display]),
    [
      ['dfd', 'signed'],
      ['filename', 'string'],
      ['how_flags', 'unsigned'],
    ],
  );
});

test('members of an embedded struct (file->f_path.dentry) add up their BTF offsets under one dereference', (t) => {
  const k = machineKernel(t);
  if (!k) return;
  const fn = btfFunction(k.btf, 'vfs_open');
  assert.ok(!('none' in fn));
  const file = fn.params.find((p) => p.name === 'file');
  assert.ok(file && file.type.kind === 'pointer' && file.type.to?.kind === 'struct');
  const fPath = file.type.to.members.find((m) => m.name === 'f_path')!;
  assert.ok(fPath.type.kind === 'struct');
  const dentry = fPath.type.members.find((m) => m.name === 'dentry')!;
  const [p] = compileKernelBtf([`vfs_open file->f_path.dentry path:x64`], k, { group: 'probelens_1_t' });
  const n = file.index + 1;
  assert.match(
    formatDefinition(p.definition),
    new RegExp(`f_path_dentry=\\+${fPath.offset + dentry.offset}\\(\\$arg${n}\\):x64 path=\\$arg\\d:x64 `),
  );
  assert.throws(() => compileKernelBtf(['vfs_open file.f_path'], k), /not a struct read through a pointer/);
  assert.throws(() => compileKernelBtf(['vfs_open file->nope'], k), /has no member nope/);
});

test('refused before anything is written: not in kallsyms, a data symbol, a duplicate static name, the blacklist, lines and globs', (t) => {
  const k = machineKernel(t);
  if (!k) return;
  const refused = (spec: string, why: RegExp) =>
    assert.throws(
      () => compileKernelBtf([spec], k),
      (e: Error) => e instanceof CompileError && why.test(e.message),
      spec,
    );
  refused('no_such_function_pl', /no_such_function_pl is not in the target's \/proc\/kallsyms/);
  refused('jiffies', /jiffies is not a function in the target's \/proc\/kallsyms \(its type there is 'D'\)/);
  refused('dup_static', /dup_static names 2 functions in the target's \/proc\/kallsyms \(0xffffffff81200000, 0xffffffff81300000\)/);
  refused('do_int3', /do_int3 is on the kernel's kprobe blacklist/);
  refused('fs/open.c:100', /needs the kernel's DWARF/);
  refused('do_sys_open*', /a glob needs a vmlinux/);
  refused('do_sys_openat2+4', /offset needs the kernel's DWARF/);
  assert.throws(() => compileKernelBtf(['do_sys_openat2 $retval'], k), /only available on FUNC%return/);
  refused('do_sys_openat2%return dfd', /read at the entry/);
  refused('do_sys_openat2 nope', /no parameter nope \(the function has dfd, filename, how\)/);
  // A module's function: its parameters are in the module's own BTF (/sys/kernel/btf/MODULE), which was not read.
  refused('ext4_fn', /the BTF of the module ext4 was not read \(\/sys\/kernel\/btf\/ext4\)/);
});

test("a function not in the kernel's available_filter_functions (notrace) is refused before anything is written", (t) => {
  const k = machineKernel(t);
  if (!k) return;
  const traceable = parseFilterFunctions('vfs_open\ndo_sys_openat2\next4_fn [ext4]\n');
  assert.deepEqual([...traceable], ['vfs_open', 'do_sys_openat2', 'ext4_fn', 'ext4:ext4_fn']);
  assert.equal(compileKernelBtf(['do_sys_openat2'], { ...k, traceable }).length, 1);
  assert.throws(
    () => compileKernelBtf(['dup_static'], { ...k, traceable, kallsyms: parseKallsyms('ffffffff81200000 t dup_static') }),
    /dup_static is not in the kernel's available_filter_functions: it is notrace/,
  );
});

test('an unreadable blacklist and an offline compile (no kallsyms) are said in the warnings', (t) => {
  const k = machineKernel(t);
  if (!k) return;
  const [p] = compileKernelBtf(
    ['do_sys_openat2 dfd'],
    { ...k, kallsyms: undefined, blacklist: { unreadable: 'no debugfs' } },
    { group: 'probelens_1_t' },
  );
  assert.ok(p.warnings.some((w) => /blacklist could not be read \(no debugfs\)/.test(w)));
  assert.ok(p.warnings.some((w) => /without the target's kallsyms/.test(w)));
  assert.equal(p.address, 0n);
  assert.throws(
    () => compileKernelBtf(['no_such_function_pl'], { ...k, kallsyms: undefined }),
    /the BTF has no function no_such_function_pl/,
  );
});

test('a `user` type tag makes a pointer a user pointer: `:str` reads a user string and members are read with +u', () => {
  const b = new BtfBuilder();
  const int = b.int('int', 4, true);
  const ch = b.int('char', 1, true);
  const userCh = b.ref('type_tag', b.ref('const', ch), 'user');
  const uptr = b.ptr(userCh);
  const s = b.struct('req', 16, [
    { name: 'n', type: int, bitOffset: 0 },
    { name: 'name', type: uptr, bitOffset: 64 },
  ]);
  const sp = b.ptr(s);
  const usp = b.ptr(b.ref('type_tag', s, 'user'));
  const e = b.enum('mode', 4, false, [['A', 0]]);
  b.func(
    'handle',
    b.proto(int, [
      ['r', sp],
      ['u', usp],
      ['m', e],
      ['s', s],
      ['after', int],
    ]),
  );
  const k: RunningKernel = { btf: Btf.parse(b.bytes()), kallsyms: parseKallsyms('ffffffff81000000 T handle'), blacklist: new Set() };
  const [p] = compileKernelBtf(['handle r->name:string r->n u->n m'], k, { group: 'probelens_1_t' });
  assert.equal(
    formatDefinition(p.definition),
    'p:probelens_1_t/handle handle r_name=+0(+8($arg1)):ustring r_n=+0($arg1):s32 u_n=+u0($arg2):s32 m=$arg3:u32 probelens_comm=$comm:string',
  );
  // A struct passed by value is no one value, and the slot of a parameter after it is unknown.
  assert.throws(() => compileKernelBtf(['handle s'], k), /a struct \(req\) is not one value/);
  assert.throws(() => compileKernelBtf(['handle after'], k), /its slot is unknown/);
});

test('bitfields are read as their bits of the integer holding them (b3@5/32), signed ones shown sign-extended', () => {
  const b = new BtfBuilder();
  const uint = b.int('unsigned int', 4, false);
  const sint = b.int('int', 4, true);
  const s = b.struct('flags', 16, [
    { name: 'a', type: uint, bitOffset: 0, bitSize: 3 },
    { name: 'b', type: sint, bitOffset: 3, bitSize: 5 },
    { name: 'c', type: uint, bitOffset: 30, bitSize: 4 },
    { name: 'd', type: uint, bitOffset: 72, bitSize: 3 },
    { name: 'whole', type: uint, bitOffset: 96, bitSize: 0 },
  ]);
  b.func('f', b.proto(sint, [['p', b.ptr(s)]]));
  const k: RunningKernel = { btf: Btf.parse(b.bytes()), kallsyms: parseKallsyms('ffffffff81000000 T f'), blacklist: new Set() };
  const [p] = compileKernelBtf(['f p->a p->b p->c p->d p->whole'], k, { group: 'probelens_1_t' });
  assert.equal(
    formatDefinition(p.definition),
    'p:probelens_1_t/f f p_a=+0($arg1):b3@0/32 p_b=+0($arg1):b5@3/32 p_c=+0($arg1):b4@30/64 p_d=+8($arg1):b3@8/32 p_whole=+12($arg1):u32 probelens_comm=$comm:string',
  );
  assert.deepEqual(
    p.args.filter((a) => !a.hidden).map((a) => a.display),
    ['unsigned', 'signed', 'unsigned', 'unsigned', 'unsigned'],
  );
  assert.throws(() => compileKernelBtf(['f p->a:u32'], k), /p->a is a bitfield: it is read as its 3 bits, give it no type/);
});

test('kallsyms and the blacklist parse as the kernel prints them', () => {
  const ks = parseKallsyms(KALLSYMS);
  assert.deepEqual(ks.get('ext4_fn'), [{ address: 0xffffffffc0001000n, type: 't', module: 'ext4' }]);
  assert.equal(ks.get('dup_static')?.length, 2);
  assert.deepEqual([...parseKprobeBlacklist(BLACKLIST)], ['do_int3']);
  assert.deepEqual([...parseKprobeBlacklist('0xffffffffc0000000-0xffffffffc0000010\t[kvm]\tkvm_fn\nnonsense\n')], ['kvm_fn']);
});

/** A kernel and a module (af_key) in crafted BTF: the module's split BTF on the kernel's, kallsyms tagging its symbols. */
function moduleKernel(): RunningKernel {
  const base = new BtfBuilder();
  const int = base.int('int', 4, true);
  const socket = base.struct('socket', 16, [{ name: 'type', type: base.int('short int', 2, true), bitOffset: 32 }]);
  const net = base.struct('net', 8, []);
  base.func('sock_create', base.proto(int, [['family', int]]));
  const mod = new BtfBuilder(base);
  const create = mod.proto(int, [
    ['net', base.ptr(net)],
    ['sock', mod.ptr(socket)],
    ['protocol', int],
    ['kern', int],
  ]);
  mod.func('pfkey_create', create);
  mod.func('both_create', create);
  const kernel = Btf.parse(base.bytes());
  return {
    btf: kernel,
    modules: new Map([['af_key', Btf.parse(mod.bytes(), kernel)]]),
    kallsyms: parseKallsyms(
      [
        'ffffffff81234560 T sock_create',
        'ffffffff81234600 t both_create',
        'ffffffffc0a02070 t pfkey_create\t[af_key]',
        'ffffffffc0a03000 t both_create\t[af_key]',
        'ffffffffc0a04000 d pfkey_mutex\t[af_key]',
        'ffffffffc0b00000 t vsock_create\t[vsock]',
      ].join('\n'),
    ),
    blacklist: new Set(),
    traceable: parseFilterFunctions(
      ['sock_create', 'both_create', 'pfkey_create [af_key]', 'both_create [af_key]', 'vsock_create [vsock]'].join('\n'),
    ),
  };
}

test('MODULE:FUNC: a module function is found among kallsyms lines tagged [MODULE], typed by its split BTF, written MODULE:FUNC', () => {
  const k = moduleKernel();
  const [entry, ret] = compileKernelBtf(['af_key:pfkey_create protocol kern sock->type', 'af_key:pfkey_create%return $retval'], k, {
    group: 'probelens_1_t',
  });
  assert.equal(
    formatDefinition(entry.definition),
    'p:probelens_1_t/pfkey_create af_key:pfkey_create protocol=$arg3:s32 kern=$arg4:s32 sock_type=+4($arg2):s16 probelens_comm=$comm:string',
  );
  assert.equal(
    formatDefinition(ret.definition),
    'r:probelens_1_t/pfkey_create_return af_key:pfkey_create retval=$retval:s32 probelens_comm=$comm:string',
  );
  assert.equal(entry.address, 0xffffffffc0a02070n);
  assert.deepEqual(kernelSourceLines([entry]), [
    `af_key:pfkey_create: from the target's BTF (/sys/kernel/btf/af_key on /sys/kernel/btf/vmlinux) and kallsyms (no .ko); ${NO_INLINED_NOTE}`,
  ]);
  // A plain name kallsyms lists once, in a module, is that module's function, written as such (bpftrace's rule).
  const [plain] = compileKernelBtf(['pfkey_create kern'], k, { group: 'probelens_1_t' });
  assert.equal(
    formatDefinition(plain.definition),
    'p:probelens_1_t/pfkey_create af_key:pfkey_create kern=$arg4:s32 probelens_comm=$comm:string',
  );
  // The module's prefix tells a name the kernel and a module share apart.
  const [mine] = compileKernelBtf(['af_key:both_create protocol'], k, { group: 'probelens_1_t' });
  assert.equal(
    formatDefinition(mine.definition),
    'p:probelens_1_t/both_create af_key:both_create protocol=$arg3:s32 probelens_comm=$comm:string',
  );
});

test('MODULE:FUNC refused before anything is written: a module not loaded, a function it lacks, a data symbol, notrace, no BTF read', () => {
  const k = moduleKernel();
  const refused = (spec: string, why: RegExp, kernel = k) =>
    assert.throws(
      () => compileKernelBtf([spec], kernel),
      (e: Error) => e instanceof CompileError && why.test(e.message),
      spec,
    );
  refused(
    'af_packet:packet_create',
    /the module af_packet is not loaded on the target \(\/proc\/kallsyms lists no symbol of \[af_packet\]\): load it \(modprobe af_packet\)/,
  );
  refused(
    'af_key:vsock_create',
    /the module af_key has no function vsock_create in the target's \/proc\/kallsyms \(vsock_create is at 0xffffffffc0b00000 \[vsock\]: write vsock:vsock_create\)/,
  );
  refused('af_key:pfkey_mutex', /af_key:pfkey_mutex is not a function in the target's \/proc\/kallsyms \(its type there is 'd'\)/);
  refused(
    'both_create',
    /both_create names 2 functions in the target's \/proc\/kallsyms .*a module's is named MODULE:both_create \(af_key:both_create\)/,
  );
  // vsock is loaded, but its BTF was not read (no spec named it when the kernel was read).
  refused('vsock:vsock_create', /the BTF of the module vsock was not read/);
  refused('af_key:pfkey_create', /cannot read the module af_key's BTF on the target \(\/sys\/kernel\/btf\/af_key: No such file\)/, {
    ...k,
    modules: new Map([['af_key', { unreadable: '/sys/kernel/btf/af_key: No such file' }]]),
  });
  refused('af_key:pfkey_create', /af_key:pfkey_create is not in the kernel's available_filter_functions/, {
    ...k,
    traceable: parseFilterFunctions('pfkey_create\n'),
  });
  refused('af_key:pfkey_create:3', /a source file, line or offset needs the kernel's DWARF/);
});
