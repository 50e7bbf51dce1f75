// `probelens define kernel` and `functions kernel` from a saved BTF blob (this machine's /sys/kernel/btf/vmlinux):
// no vmlinux, the definitions by $argN, the source said on stderr and in the JSON; a corrupt blob is one sentence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { missing } from '../../helpers/require';
import { BtfBuilder } from '../../helpers/btfBuilder';

const MAIN = resolve(__dirname, '../../../src/cli/main.ts');
const SYS_BTF = '/sys/kernel/btf/vmlinux';
const dir = mkdtempSync(join(tmpdir(), 'probelens-btf-cli-'));

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: dir },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function savedBtf(t: Parameters<typeof missing>[0]): string | undefined {
  if (!existsSync(SYS_BTF)) {
    missing(t, `${SYS_BTF} (a kernel with CONFIG_DEBUG_INFO_BTF)`);
    return undefined;
  }
  const saved = join(dir, 'vmlinux.btf');
  writeFileSync(saved, readFileSync(SYS_BTF));
  return saved;
}

test('define kernel --btf FILE: kprobes by $argN from the BTF, and stderr says the source and that inlined copies are unknown', (t) => {
  const btf = savedBtf(t);
  if (!btf) return;
  const kallsyms = join(dir, 'kallsyms');
  writeFileSync(kallsyms, 'ffffffff81234560 T do_sys_openat2\nffffffff81200000 t twice\nffffffff81300000 t twice\n');
  const r = cli(
    'define',
    'kernel',
    '--btf',
    btf,
    '--kallsyms',
    kallsyms,
    '--group',
    'probelens_1_t',
    'do_sys_openat2 dfd filename:ustring how->flags',
    'do_sys_openat2%return $retval',
  );
  assert.equal(r.code, 0, r.err);
  assert.equal(
    r.out.split('\n')[0],
    'p:probelens_1_t/do_sys_openat2 do_sys_openat2 dfd=$arg1:s32 filename=+0($arg2):ustring how_flags=+0($arg3):u64 probelens_comm=$comm:string',
  );
  assert.match(r.out.split('\n')[1], /^r:probelens_1_t\/do_sys_openat2_return do_sys_openat2 retval=\$retval:s(32|64) /);
  assert.match(
    r.err,
    /^probelens: do_sys_openat2: from the target's BTF and kallsyms \(no vmlinux\); one entry site \(calls at copies inlined/m,
  );
  const json = cli('define', 'kernel', '--btf', btf, '--json', 'do_sys_openat2 dfd');
  assert.equal(json.code, 0, json.err);
  assert.equal(JSON.parse(json.out)[0].source, 'btf');
  const dup = cli('define', 'kernel', '--btf', btf, '--kallsyms', kallsyms, 'twice');
  assert.equal(dup.code, 1);
  assert.match(dup.err, /twice names 2 functions in the target's \/proc\/kallsyms \(0xffffffff81200000, 0xffffffff81300000\)/);
});

test('functions kernel --btf FILE lists the BTF functions with their C prototypes', (t) => {
  const btf = savedBtf(t);
  if (!btf) return;
  const r = cli('functions', 'kernel', '--btf', btf, '--match', 'do_sys_openat2');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^\S+ do_sys_openat2\(int dfd, const char \* filename, struct open_how \* how\)\n$/);
  const j = JSON.parse(cli('functions', 'kernel', '--btf', btf, '--match', 'do_sys_openat2', '--json').out);
  assert.deepEqual(j[0].params, [
    { name: 'dfd', type: 'int' },
    { name: 'filename', type: 'const char *' },
    { name: 'how', type: 'struct open_how *' },
  ]);
});

test('a truncated BTF file is refused in one sentence; --btf without `kernel` is a usage error', () => {
  const bad = join(dir, 'bad.btf');
  writeFileSync(bad, Buffer.from([0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
  const r = cli('define', 'kernel', '--btf', bad, 'f');
  assert.equal(r.code, 1);
  assert.match(r.err, /malformed BTF: type section .* runs past the end/);
  assert.equal(r.err.trim().split('\n').length, 1, r.err);
  assert.equal(cli('functions', '/bin/true', '--btf', bad).code, 2);
  assert.equal(cli('define', '/bin/true', '--btf', bad, 'main').code, 2);
  // Options of one kind of BIN given to the other are usage errors, not silently ignored.
  assert.equal(cli('define', '/bin/true', '--sudo', 'main').code, 2);
  const remote = cli('define', 'kernel', '--btf', bad, '--remote-path', '/x', 'f');
  assert.equal(remote.code, 2);
  assert.match(remote.err, /--remote-path needs a binary or vmlinux/);
  assert.equal(cli('trace', 'kernel', 'f', '--debug-dir', '/x').code, 2);
});

test("functions kernel --btf MODULE_BTF --base-btf VMLINUX_BTF lists a module's own functions, typed through the kernel's", () => {
  const base = new BtfBuilder();
  const int = base.int('int', 4, true);
  const socket = base.struct('socket', 16, []);
  base.func('sock_create', base.proto(int, [['family', int]]));
  const mod = new BtfBuilder(base);
  mod.func(
    'pfkey_create',
    mod.proto(int, [
      ['sock', mod.ptr(socket)],
      ['protocol', int],
    ]),
  );
  const baseFile = join(dir, 'base.btf');
  const modFile = join(dir, 'af_key.btf');
  writeFileSync(baseFile, base.bytes());
  writeFileSync(modFile, mod.bytes());
  const r = cli('functions', 'kernel', '--btf', modFile, '--base-btf', baseFile);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, 'int pfkey_create(struct socket * sock, int protocol)\n');
  // Without its base, a split BTF's references to the kernel's types cannot be read: one sentence, not a crash.
  const alone = cli('functions', 'kernel', '--btf', modFile);
  assert.notEqual(alone.code, 0);
  assert.match(alone.err, /malformed BTF: /);
  assert.equal(alone.err.trim().split('\n').length, 1, alone.err);
  assert.equal(cli('functions', 'kernel', '--base-btf', baseFile).code, 2, '--base-btf without --btf is bad usage');
});
