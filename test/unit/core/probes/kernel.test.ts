// A Linux kernel image as a probe target, on a stand-in built here (test/helpers/miniKernel.ts). The real kernel
// (the VM's dbg vmlinux): test/vm/kernelDwarf.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBinary } from '../../../../src/core/binary';
import { loadIndex } from '../../../../src/core/index/load';
import { CompileError, compileProbes } from '../../../../src/core/probes/compiler';
import { formatDefinition } from '../../../../src/core/probes/definition';
import { isKernelImage, kernelImage, kernelPoint, kernelRefusal } from '../../../../src/core/probes/kernel';
import { miniKernel, miniModule } from '../../../helpers/miniKernel';
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
  // Counts by caller: an entry also fetches its return address, the top of the stack there; a return does not.
  const [withCaller] = await compileProbes(['traced dfd'], index, { callers: true });
  assert.equal(
    formatDefinition(withCaller.definition),
    'p:probelens_unbound/traced traced dfd=%di:s32 probelens_caller=$stack0:x64 probelens_comm=$comm:string',
  );
  const [retNoCaller] = await compileProbes(['traced%return'], index, { callers: true });
  assert.doesNotMatch(formatDefinition(retNoCaller.definition), /stack/);

  for (const [spec, why] of [
    ['untraced a', /untraced does not call __fentry__ at its start: it is notrace/],
    ['listed a', /listed is on the kernel's kprobe blacklist/],
    ['instr_free%return', /instr_free\+0 is in \.noinstr\.text/],
    ['traced+1', /not an instruction boundary/],
  ] as const) {
    await assert.rejects(compileProbes([spec], index, {}), (e: Error) => e instanceof CompileError && why.test(e.message), spec);
  }
});

test('a kernel function is all of its code: its DWARF entry, its clone and every inlined copy, each at HOLDER+OFFSET', async (t) => {
  const bin = miniKernel(t);
  if (!bin) return;
  assert.match(run('readelf', ['-SW', bin]), /\.rela\.debug_info/, 'linked with --emit-relocs, as the kernel is');
  const { index } = await loadIndex(bin, { noCache: true });
  // The entry comes from the function's own DWARF, exact above 2^53.
  const one = index.findFunctions('ksys_one');
  assert.equal(one.length, 1);
  assert.deepEqual(
    one[0].sites.map((s) => [s.kind, s.address]),
    [['entry', addressOf(bin, 'ksys_one')]],
  );
  // The header's static inline function has a DIE in each unit: one function, with the copies of both units.
  const getFd = index.findFunctions('get_fd');
  assert.equal(getFd.length, 1, 'get_fd is listed once, not once per unit that includes its header');
  const holders = getFd[0].sites.map((s) => {
    assert.equal(s.kind, 'inlined');
    return s.caller;
  });
  assert.deepEqual(holders.sort(), ['instr_free', 'ksys_one', 'ksys_two', 'untraced']);
  const copies = await compileProbes(['get_fd'], index, {});
  // The copies in .noinstr.text and in a notrace function are left out, and said; the others are armed inside their holders.
  assert.deepEqual(copies.map((p) => p.definition.target.type === 'kprobe' && p.definition.target.symbol).sort(), ['ksys_one', 'ksys_two']);
  for (const p of copies) {
    const target = p.definition.target;
    assert.ok(target.type === 'kprobe' && target.offset > 0n, `an inlined copy is inside its holder: ${formatDefinition(p.definition)}`);
    assert.equal(p.lowerBound, true);
    const warned = p.warnings.join('\n');
    assert.match(warned, /get_fd: not armed at 2 of its sites/);
    assert.match(warned, /instr_free\+\d+ is in \.noinstr\.text/);
    // The kernel refuses kprobe events anywhere in a notrace function, an inlined copy's offset too.
    assert.match(warned, /untraced\+\d+ is inside untraced, which does not call __fentry__ at its start/);
  }
  const k = kernelImage(await openBinary(bin))!;
  for (const p of copies) {
    const target = p.definition.target;
    if (target.type === 'kprobe') assert.equal(kernelRefusal(k, addressOf(bin, target.symbol) + target.offset, false), undefined);
  }
  // GCC's clone of a static function is its site, at the clone's own symbol.
  const scale = index.findFunctions('scale');
  assert.equal(scale.length, 1);
  assert.deepEqual(
    scale[0].sites.map((s) => [s.kind, s.address]),
    [['clone', addressOf(bin, 'scale.constprop.0')]],
  );
  const [clone] = await compileProbes(['scale a'], index, {});
  assert.deepEqual(clone.definition.target, { type: 'kprobe', symbol: 'scale.constprop.0', offset: 0n });
});

test("a module's .ko (ET_REL) is a kernel image: its sites are MODULE:SYMBOL+OFFSET, and .init.text, .kprobes.text and notrace are refused", async (t) => {
  const ko = miniModule(t);
  if (!ko) return;
  const image = await openBinary(ko);
  assert.equal(image.type, 'REL');
  assert.ok(isKernelImage(image));
  const k = kernelImage(image)!;
  assert.equal(k.module, 'minimod');
  assert.ok(k.fentry !== undefined, 'the undefined __fentry__ has a slot of its own that the relocated calls reach');
  const { index } = await loadIndex(ko, { noCache: true });
  const [entry] = await compileProbes(['mod_create protocol kern'], index, {});
  assert.equal(
    formatDefinition(entry.definition),
    'p:probelens_unbound/mod_create minimod:mod_create protocol=%dx:s32 kern=%cx:s32 probelens_comm=$comm:string',
  );
  // `MODULE:FUNC` on the module's own .ko is the same function; another module's name is refused.
  const [named] = await compileProbes(['minimod:mod_create%return $retval'], index, {});
  assert.equal(
    formatDefinition(named.definition),
    'r:probelens_unbound/mod_create_return minimod:mod_create retval=$retval:s32 probelens_comm=$comm:string',
  );
  await assert.rejects(compileProbes(['af_key:mod_create'], index, {}), /is the module minimod, not af_key/);
  // The inlined copies of mod_get, each at its holder: MODULE:HOLDER+OFFSET, the offset as objdump shows the call.
  const got = (await compileProbes(['mod_get'], index, {})).map((p) => formatDefinition(p.definition).split(' ')[1]);
  assert.ok(got.length >= 2 && got.every((w) => /^minimod:(mod_create|mod_other)\+\d+$/.test(w)), got.join(' '));
  for (const [spec, why] of [
    ['mod_untraced a', /mod_untraced does not call __fentry__ at its start: it is notrace/],
    ['mod_kprobes', /mod_kprobes\+0 is in \.kprobes\.text/],
    ['mod_init', /mod_init\+0 is in \.init\.text \(code the kernel frees once the module has loaded\)/],
  ] as const) {
    await assert.rejects(compileProbes([spec], index, {}), (e: Error) => e instanceof CompileError && why.test(e.message), spec);
  }
  // A vmlinux's MODULE:FUNC names nothing there.
  const vm = miniKernel(t)!;
  await assert.rejects(
    compileProbes(['minimod:traced'], (await loadIndex(vm, { noCache: true })).index, {}),
    /names a kernel module's function: give that module's \.ko/,
  );
});
