import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { blankNonCode, cDefinitions, isKernelTreeRoot, syscallSymbols } from '../../../../src/vscode/model/cDefinitions';
import { vmKernelSourceFiles } from '../../../helpers/kernelSource';
import { missing } from '../../../helpers/require';
import { VmUnavailable } from '../../../helpers/vmImage';

const names = (text: string) => cDefinitions(text).map((d) => `${d.line}:${d.name}${d.macro ? `(${d.macro})` : ''}`);

test("the kernel's own fs/open.c: every function body's header is found, by name and line, and nothing else", (t) => {
  let dir: string;
  try {
    dir = vmKernelSourceFiles(['fs/open.c']).dir;
  } catch (e) {
    if (!(e instanceof VmUnavailable)) throw e;
    missing(t, e.message);
    return;
  }
  const text = readFileSync(join(dir, 'fs/open.c'), 'utf8');
  const lines = text.split('\n');
  // Kernel style opens a function's body with `{` alone in the first column, and only a function's: the header is
  // the nearest line above it that starts in the first column and is no directive.
  const expected: string[] = [];
  lines.forEach((l, i) => {
    if (l !== '{') return;
    let h = i - 1;
    while (h >= 0 && (/^\s/.test(lines[h]) || lines[h].startsWith('#') || lines[h] === '')) h--;
    const header = lines[h];
    const sys = /^SYSCALL_DEFINE\d\((\w+)/.exec(header);
    if (sys) expected.push(`${h + 1}:${sys[1]}(SYSCALL_DEFINE${header[14]})`);
    else if (!/^COMPAT_SYSCALL_DEFINE/.test(header)) expected.push(`${h + 1}:${/(\w+)\(/.exec(header)![1]}`);
  });
  assert.ok(expected.length > 50, `fs/open.c has many functions (${expected.length})`);
  const got = names(text);
  assert.deepEqual(got, expected);
  const line = lines.findIndex((l) => /^static long do_sys_openat2\(/.test(l)) + 1;
  assert.ok(got.includes(`${line}:do_sys_openat2`));
  const openat = cDefinitions(text).find((d) => d.name === 'openat');
  assert.deepEqual(openat?.symbols, syscallSymbols('openat'));
  assert.equal(openat?.symbols[0], '__x64_sys_openat');
});

test('multi-line prototypes, attributes before and after the parameters, and the name on its own line', () => {
  const src = [
    'static int __init',
    'setup_thing(char *str)',
    '{',
    '\treturn 1;',
    '}',
    '__printf(2, 3) static void',
    '  log_it(int level,',
    '         const char *fmt, ...)',
    '{',
    '}',
    'void take(spinlock_t *l) __acquires(l)',
    '{',
    '}',
    'int __attribute__((weak)) arch_hook(void) {',
    '\tif (x) { y(); }',
    '}',
  ].join('\n');
  assert.deepEqual(names(src), ['2:setup_thing', '7:log_it', '11:take', '14:arch_hook']);
});

test('declarations, initializers, structs, macros, comments, strings and directives are not definitions', () => {
  const src = [
    'int proto(int a);',
    'static const struct file_operations fops = {',
    '\t.open = generic_open,',
    '};',
    'struct thing {',
    '\tint (*op)(int);',
    '};',
    'DEFINE_PER_CPU(int, counter);',
    'BPF_CALL_2(bpf_helper, int, a, int, b)',
    '{',
    '}',
    '/* int commented(void) { } */',
    '// int line_comment(void) {',
    'const char *s = "int in_string(void) {";',
    '#define MACRO_FN(x) int x(void) { \\',
    '\treturn 0; }',
    'void (*signal_like(int sig))(int)',
    '{',
    '}',
    'static int real(void)',
    '{',
    "\tchar c = '{';",
    '\treturn c;',
    '}',
    'COMPAT_SYSCALL_DEFINE1(foo, int, a)',
    '{',
    '}',
  ].join('\n');
  assert.deepEqual(names(src), ['20:real']);
});

test('SYSCALL_DEFINEn names the system call, whose symbols are per architecture', () => {
  const d = cDefinitions('SYSCALL_DEFINE3(openat, int, dfd, const char __user *, filename, int, flags,\n\t\tumode_t, mode)\n{\n}\n');
  assert.equal(d.length, 1);
  assert.deepEqual({ ...d[0] }, { name: 'openat', line: 1, symbols: syscallSymbols('openat'), macro: 'SYSCALL_DEFINE3' });
  assert.deepEqual(cDefinitions('SYSCALL_DEFINE0(getpid)\n{\n}\n')[0].symbols[0], '__x64_sys_getpid');
});

test('blanking keeps every line where it was', () => {
  const src = 'a /* x\ny */ b\n#if 0 \\\n  c\n"s\\"q" d\n';
  const out = blankNonCode(src);
  assert.equal(out.length, src.length);
  assert.deepEqual(
    out.split('\n').map((l) => l.trim()),
    ['a', 'b', '', '', 'd', ''],
  );
});

test('a kernel tree is told by Kbuild, Kconfig and MAINTAINERS at its root', () => {
  assert.ok(isKernelTreeRoot(new Set(['Kbuild', 'Kconfig', 'MAINTAINERS', 'fs'])));
  assert.ok(!isKernelTreeRoot(new Set(['Kconfig', 'MAINTAINERS'])));
});
