import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  describeBuildIdMatch,
  parseKernelInfo,
  parseKernelTextStart,
  readKernelInfo,
  readKernelTextStart,
} from '../../../../src/core/target/kernelInfo';
import { LocalTarget } from '../../../../src/core/target/local';
import { missing } from '../../../helpers/require';

/** One ELF note as the kernel lays it out (4-aligned name and descriptor). */
function note(owner: string, type: number, desc: Buffer): Buffer {
  const name = Buffer.from(`${owner}\0`);
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
  const head = Buffer.alloc(12);
  head.writeUInt32LE(name.length, 0);
  head.writeUInt32LE(desc.length, 4);
  head.writeUInt32LE(type, 8);
  return Buffer.concat([head, pad(name), pad(desc)]);
}

/** What `od -An -v -tx1` prints for `b`. */
const od = (b: Buffer): string =>
  [...b]
    .map((x) => x.toString(16).padStart(2, '0'))
    .join(' ')
    .replace(/((?:\S+ ){16})/g, '$1\n ');

const ID = '3b43fad5034874490492495d552c0af6a5fab235';

test('the release and the GNU build-id among the kernel notes', () => {
  const notes = Buffer.concat([
    note('Xen', 6, Buffer.from('xen-3.0')),
    note('GNU', 3, Buffer.from(ID, 'hex')),
    note('Linux', 0x100, Buffer.alloc(4)),
  ]);
  assert.deepEqual(parseKernelInfo(`6.1.0-56-cloud-amd64\n ${od(notes)}\n`), { release: '6.1.0-56-cloud-amd64', buildId: ID });
});

test('no notes (od failed), or notes without a GNU build-id: the release alone; no release is an error', () => {
  assert.deepEqual(parseKernelInfo('6.1.0-test\n'), { release: '6.1.0-test' });
  assert.deepEqual(parseKernelInfo(`6.1.0-test\n${od(note('Linux', 0x100, Buffer.alloc(4)))}\n`), { release: '6.1.0-test' });
  assert.deepEqual(parseKernelInfo('6.1.0-test\n 01 02 03\n'), { release: '6.1.0-test' });
  assert.throws(() => parseKernelInfo(''), /no kernel release/);
  assert.throws(() => parseKernelInfo('sh: uname: not found\n'), /no kernel release/);
});

test('the comparison in words: matches, or both ids', () => {
  assert.deepEqual(describeBuildIdMatch(ID, ID), { matches: true, text: `build-id ${ID} matches the vmlinux` });
  const other = 'ff'.repeat(20);
  const d = describeBuildIdMatch(other, ID);
  assert.equal(d.matches, false);
  assert.ok(d.text.includes(other) && d.text.includes(ID), d.text);
  assert.equal(describeBuildIdMatch(undefined, ID).matches, false);
  assert.equal(describeBuildIdMatch(ID, undefined).matches, false);
});

test("this machine's kernel, read through a LocalTarget, is what uname and /sys/kernel/notes say", async () => {
  const target = new LocalTarget({});
  const k = await readKernelInfo(target);
  assert.equal(k.release, execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim());
  if (existsSync('/sys/kernel/notes')) assert.match(k.buildId ?? '', /^[0-9a-f]{40}$/);
  await target.close();
});

test("the running kernel's _stext from /proc/kallsyms; hidden addresses and a missing line are refused saying why", () => {
  assert.equal(parseKernelTextStart('ffffffff9a000000 T _stext\n', 'vm'), 0xffffffff9a000000n);
  assert.equal(parseKernelTextStart('ffffffff81000000 t _stext\n', 'vm'), 0xffffffff81000000n);
  assert.throws(
    () => parseKernelTextStart('0000000000000000 T _stext\n', 'vm'),
    /vm: \/proc\/kallsyms hides the kernel's addresses .*kptr_restrict/,
  );
  assert.throws(() => parseKernelTextStart('', 'vm'), /vm: \/proc\/kallsyms names no _stext/);
  assert.throws(() => parseKernelTextStart('ffffffff81000000 T _stext_x\n', 'vm'), /names no _stext/);
});

test("this machine's _stext, read through a target as a session reads it, is the one /proc/kallsyms lists", async (t) => {
  const line = execFileSync('sh', ['-c', 'grep -m1 " _stext$" /proc/kallsyms || true'], { encoding: 'utf8' });
  if (!/^[0-9a-f]+ [tT] _stext$/m.test(line) || /^0+ /.test(line))
    return missing(t, `a user that sees kernel addresses in /proc/kallsyms (root, or kptr_restrict 0): ${JSON.stringify(line)}`);
  assert.equal(await readKernelTextStart(new LocalTarget()), BigInt(`0x${line.split(' ')[0]}`));
});
