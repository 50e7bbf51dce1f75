// A stand-in for a Linux kernel image, built with the real toolchain: C compiled as the kernel is (-pg -mfentry,
// -mcmodel=kernel) and linked at the kernel's addresses (above 2^53) by a linker script that names its
// .noinstr.text the kernel's way, with a notrace function and one on the kprobe blacklist (NOKPROBE_SYMBOL's
// `_kbl_addr_NAME` object). Two units include a header's `static inline` function (get_fd, as the kernel's
// fdget_pos), inlined into a function of each, into one in .noinstr.text and into the notrace one; the second unit has a static function
// GCC clones (scale.constprop.0). Linked as the kernel is with --emit-relocs, it keeps `.rela.debug_*` sections,
// which a reader must not apply to an ET_EXEC. Its file is named vmlinux; its build-id is no real kernel's.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { spawnSync } from 'node:child_process';
import { missing } from './require';

const workDir = mkdtempSync(join(tmpdir(), 'probelens-minikernel-'));
process.on('exit', () => rmSync(workDir, { recursive: true, force: true }));

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: workDir });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
}

function have(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

const HEADER = `
extern int fd_table[8];
static inline __attribute__((always_inline)) int get_fd(int fd) { return fd_table[fd & 7] + fd; }
`;

const SECOND = `
#include "minifile.h"
int fd_table[8];
__attribute__((noinline)) long ksys_two(int fd) { return get_fd(fd) + 1; }
static __attribute__((noinline)) int scale(int a, int k) { return a * k + fd_table[a & 7]; }
__attribute__((noinline)) long use_scale(int a) { return scale(a, 3) + scale(a + 1, 3); }
`;

const SOURCE = `
#include "minifile.h"
long ksys_two(int fd);
long use_scale(int a);
__attribute__((noinline)) long ksys_one(int fd) { return get_fd(fd) * 2; }
struct how { unsigned long flags; unsigned long mode; };
__attribute__((no_instrument_function)) void __fentry__(void) {}
const char linux_banner[] = "Linux version 0.0-probelens-test";
__attribute__((noinline)) long traced(int dfd, const char *name, struct how *how) { return dfd + name[0] + (long)how->flags * 3; }
__attribute__((noinline, no_instrument_function)) int untraced(int a) { return get_fd(a) * 7 + 1; }
__attribute__((noinline)) int listed(int a) { return a * 5 - 2; }
int (*const _kbl_addr_listed)(int) __attribute__((used, section(".init.data"))) = listed;
__attribute__((noinline, section(".noinstr.text"))) int instr_free(int a) { return get_fd(a) ^ 0x55; }
__attribute__((section(".init.text"))) int start_kernel(void) {
  struct how h = { 1, 2 };
  return (int)traced(3, "x", &h) + untraced(1) + listed(2) + instr_free(3) + ksys_one(4) + ksys_two(5) + use_scale(6);
}
`;

const SCRIPT = `
ENTRY(start_kernel)
SECTIONS {
  . = 0xffffffff81000000;
  .text : { *(.text .text.*) __noinstr_text_start = .; *(.noinstr.text) __noinstr_text_end = .; }
  .init.text : { *(.init.text) }
  .rodata : { *(.rodata .rodata.*) }
  .init.data : { *(.init.data) }
  .data : { *(.data .data.* .bss .bss.*) }
}
`;

let built: string | undefined;

/** The stand-in's path (built once per process), or undefined after marking the test skipped without gcc. */
export function miniKernel(t: TestContext): string | undefined {
  if (!have('gcc')) {
    missing(t, 'gcc (builds the stand-in kernel)');
    return undefined;
  }
  if (!built) {
    writeFileSync(join(workDir, 'minifile.h'), HEADER);
    writeFileSync(join(workDir, 'minikernel.c'), SOURCE);
    writeFileSync(join(workDir, 'minikernel2.c'), SECOND);
    writeFileSync(join(workDir, 'minikernel.lds'), SCRIPT);
    const out = join(workDir, 'vmlinux');
    run('gcc', [
      ...['-O2', '-g', '-pg', '-mfentry', '-mcmodel=kernel', '-fno-pic', '-fno-asynchronous-unwind-tables', '-ffreestanding'],
      ...[
        '-nostdlib',
        '-static',
        '-no-pie',
        '-Wl,-T,minikernel.lds',
        '-Wl,--build-id',
        '-Wl,--emit-relocs',
        'minikernel.c',
        'minikernel2.c',
        '-o',
        out,
      ],
    ]);
    built = out;
  }
  return built;
}

// A stand-in for a loadable module (a .ko): one unit compiled as the kernel compiles modules (-pg -mfentry, so each
// traceable function starts with a call of the undefined `__fentry__`, a relocation), left unlinked (ET_REL), with
// the `.modinfo` name the kernel knows it by, a notrace function, an inlined static, a function in `.init.text`
// (freed after loading) and one in `.kprobes.text`, and a build-id note section as modpost's link leaves it.
const MODULE_SOURCE = `
int mod_table[8];
static const char modinfo_name[] __attribute__((used, section(".modinfo"), aligned(1))) = "name=minimod";
static const char modinfo_license[] __attribute__((used, section(".modinfo"), aligned(1))) = "license=GPL";
static inline __attribute__((always_inline)) int mod_get(int fd) { return mod_table[fd & 7] + fd; }
__attribute__((noinline)) int mod_create(void *net, void *sock, int protocol, int kern) { return mod_get(protocol) + kern + (net != sock); }
__attribute__((noinline)) long mod_other(int a) { return mod_get(a) * 3; }
__attribute__((noinline, no_instrument_function)) int mod_untraced(int a) { return a * 7 + 1; }
__attribute__((noinline, section(".kprobes.text"))) int mod_kprobes(int a) { return a ^ 0x55; }
__attribute__((section(".init.text"))) int mod_init(void) { return mod_create(0, 0, 2, 0) + (int)mod_other(1) + mod_untraced(2) + mod_kprobes(3); }
`;

let builtModule: string | undefined;

/** The module stand-in's path (`minimod.ko`, built once per process), or undefined after marking the test skipped. */
export function miniModule(t: TestContext): string | undefined {
  if (!have('gcc') || !have('ld')) {
    missing(t, 'gcc and ld (build the stand-in module)');
    return undefined;
  }
  if (!builtModule) {
    writeFileSync(join(workDir, 'minimod.c'), MODULE_SOURCE);
    run('gcc', [
      ...['-c', '-O2', '-g', '-pg', '-mfentry', '-mcmodel=kernel', '-fno-pic', '-fno-asynchronous-unwind-tables', '-ffreestanding'],
      ...['minimod.c', '-o', 'minimod.o'],
    ]);
    // `ld -r --build-id` as the kernel's modpost link does: still ET_REL, now with .note.gnu.build-id.
    run('ld', ['-r', '--build-id', 'minimod.o', '-o', 'minimod.ko']);
    builtModule = join(workDir, 'minimod.ko');
  }
  return builtModule;
}
