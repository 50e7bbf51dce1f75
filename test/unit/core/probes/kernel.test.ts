// A Linux kernel image as a probe target, on a stand-in built here (test/helpers/miniKernel.ts). The real kernel
// (the VM's dbg vmlinux): test/vm/kernelDwarf.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBinary } from '../../../../src/core/binary';
import { loadIndex } from '../../../../src/core/index/load';
import { CompileError, compileProbes } from '../../../../src/core/probes/compiler';
import { formatDefinition } from '../../../../src/core/probes/definition';
import { isKernelImage, kernelImage, kernelPoint, kernelRefusal } from '../../../../src/core/probes/kernel';
import { miniKernel } from '../../../helpers/miniKernel';
import { run } from '../binary/build';

/** `nm`'s address of `name`. */
function addressOf(bin: string, name: string): bigint {
  const line = run('nm', [bin])
    .split('\n')
    .find((l) => l.endsWith(` ${name}`));
  assert.ok(line, `${name} in nm's listing`);
  return BigInt(`0x${line.split(' ')[0]}`);
}

test('a kernel image is told from a program; its sites are SYMBOL+OFFSET, and what the kernel must not probe is named', async (t) => {
  const bin = miniKernel(t);
  if (!bin) return;
  const image = await openBinary(bin);
  assert.equal(isKernelImage(image), true);
  const k = kernelImage(image)!;
  const traced = addressOf(bin, 'traced');
  assert.ok(traced > 2n ** 53n, 'linked where the kernel is');
  assert.deepEqual(kernelPoint(k, traced), { symbol: 'traced', offset: 0n });
  assert.deepEqual(kernelPoint(k, traced + 5n), { symbol: 'traced', offset: 5n });
  assert.equal(kernelRefusal(k, traced, true), undefined);
  assert.equal(kernelRefusal(k, traced + 5n, false), undefined, 'the instruction after `call __fentry__`');
  assert.match(kernelRefusal(k, traced + 1n, false) ?? '', /traced\+1 is not an instruction boundary of traced/);
  assert.match(kernelRefusal(k, addressOf(bin, 'untraced'), true) ?? '', /untraced does not call __fentry__ at its start: it is notrace/);
  assert.match(kernelRefusal(k, addressOf(bin, 'listed'), true) ?? '', /listed is on the kernel's kprobe blacklist/);
  assert.match(kernelRefusal(k, addressOf(bin, 'instr_free'), true) ?? '', /instr_free\+0 is in \.noinstr\.text/);

  const program = await openBinary(process.execPath);
  assert.equal(isKernelImage(program), false);
  assert.equal(kernelImage(program), undefined);
});

test('define on a kernel image: kprobes at SYMBOL+OFFSET with DWARF-typed arguments, user strings from user memory, $retval at the return', async (t) => {
  const bin = miniKernel(t);
  if (!bin) return;
  const { index } = await loadIndex(bin, { noCache: true });
  const [entry] = await compileProbes(['traced dfd name:ustring how->flags'], index, {});
  assert.deepEqual(entry.definition.target, { type: 'kprobe', symbol: 'traced', offset: 0n });
  assert.equal(
    formatDefinition(entry.definition),
    'p:probelens_unbound/traced traced dfd=%di:s32 name=+u0(%si):ustring how_flags=+0(%dx):u64 probelens_comm=$comm:string',
  );
  const [ret] = await compileProbes(['traced%return $retval'], index, {});
  assert.equal(formatDefinition(ret.definition), 'r:probelens_unbound/traced_return traced retval=$retval:s64 probelens_comm=$comm:string');

  for (const [spec, why] of [
    ['untraced a', /untraced does not call __fentry__ at its start: it is notrace/],
    ['listed a', /listed is on the kernel's kprobe blacklist/],
    ['instr_free%return', /instr_free\+0 is in \.noinstr\.text/],
    ['traced+1', /not an instruction boundary/],
  ] as const) {
    await assert.rejects(compileProbes([spec], index, {}), (e: Error) => e instanceof CompileError && why.test(e.message), spec);
  }
});
