import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bindGroup,
  formatDefinition,
  uniqueEventName,
  DefinitionError,
  GROUP_PATTERN,
  UNBOUND_GROUP,
  KRETPROBE_MAXACTIVE_MAX,
  kretprobeMaxactive,
} from '../../../../src/core/probes/definition';

const group = 'probelens_1234_ab12';

test('definitions in the uprobe tracer syntax', () => {
  assert.equal(
    formatDefinition({
      kind: 'p',
      group,
      event: 'add_ints',
      target: { type: 'uprobe', path: '/opt/app/calls', offset: 0x1139n },
      args: [
        { name: 'a', fetch: '%di', type: 's32' },
        { name: 's', fetch: '+0(+16(%di))', type: 'string' },
      ],
    }),
    'p:probelens_1234_ab12/add_ints /opt/app/calls:0x1139 a=%di:s32 s=+0(+16(%di)):string',
  );
  assert.equal(
    formatDefinition({
      kind: 'p',
      group,
      event: 'req',
      target: { type: 'uprobe', path: '/a/usdt', offset: 0x11a0n, refCtrOffset: 0x4010n },
      args: [],
    }),
    'p:probelens_1234_ab12/req /a/usdt:0x11a0(0x4010)',
  );
  assert.equal(
    formatDefinition({
      kind: 'r',
      group,
      event: 'f',
      target: { type: 'uprobe', path: '/a/b', offset: 16n },
      args: [{ name: 'ret', fetch: '$retval', type: 's64' }],
    }),
    'r:probelens_1234_ab12/f /a/b:0x10 ret=$retval:s64',
  );
});

test('a kernel probe target renders as SYMBOL+OFFS (never an absolute address: KASLR moves the kernel)', () => {
  const d = { kind: 'p' as const, group, event: 'k', args: [{ name: 'fd', fetch: '%di', type: 's32' }] };
  assert.equal(
    formatDefinition({ ...d, target: { type: 'kprobe', symbol: 'ksys_read', offset: 37n } }),
    'p:probelens_1234_ab12/k ksys_read+37 fd=%di:s32',
  );
  assert.equal(
    formatDefinition({ ...d, target: { type: 'kprobe', symbol: 'do_sys_open', offset: 0n } }),
    'p:probelens_1234_ab12/k do_sys_open fd=%di:s32',
  );
  assert.throws(() => formatDefinition({ ...d, target: { type: 'kprobe', symbol: 'a b', offset: 0n } }), DefinitionError);
  // The kernel's calling-convention accessors (a kernel probe compiled from BTF), alone and under dereferences.
  const byArg = { ...d, target: { type: 'kprobe' as const, symbol: 'do_sys_openat2', offset: 0n } };
  assert.equal(
    formatDefinition({
      ...byArg,
      args: [
        { name: 'dfd', fetch: '$arg1', type: 's32' },
        { name: 'f', fetch: '+u8(+0($arg3))', type: 'u64' },
      ],
    }),
    'p:probelens_1234_ab12/k do_sys_openat2 dfd=$arg1:s32 f=+u8(+0($arg3)):u64',
  );
  for (const fetch of ['$arg0', '$arg', '$args', '$arg1x', '+0($arg)'])
    assert.throws(() => formatDefinition({ ...byArg, args: [{ name: 'x', fetch, type: 'u64' }] }), DefinitionError, fetch);
});

test('anything that could smuggle text into tracefs or a shell is refused', () => {
  const at = (path: string) => ({ type: 'uprobe' as const, path, offset: 1n });
  const base = { kind: 'p' as const, group, event: 'e', target: at('/a/b'), args: [] };
  const bad = [
    { ...base, group: 'probelens_1_x y' },
    { ...base, group: 'other' },
    { ...base, event: 'a;b' },
    { ...base, target: at('/a b') },
    { ...base, target: at('relative') },
    { ...base, target: at('/a\nb') },
    { ...base, args: [{ name: 'x', fetch: '%di $(reboot)' }] },
    { ...base, args: [{ name: 'x', fetch: '%di', type: 'u32;' }] },
    { ...base, args: [{ name: 'x y', fetch: '%di' }] },
    {
      ...base,
      args: [
        { name: 'x', fetch: '%di' },
        { name: 'x', fetch: '%si' },
      ],
    },
  ];
  for (const d of bad)
    assert.throws(() => formatDefinition(d), DefinitionError, `${d.group} ${d.event} ${d.target.path} ${JSON.stringify(d.args)}`);
});

test('event names are C identifiers of at most 63 characters, unique with a numeric suffix', () => {
  const used = new Set<string>();
  assert.equal(uniqueEventName('shapes::Circle::area', used), 'shapes_Circle_area');
  assert.equal(uniqueEventName('shapes::Circle::area', used), 'shapes_Circle_area_2');
  assert.equal(uniqueEventName('main.(*Account).Deposit', used), 'main_Account_Deposit');
  assert.equal(uniqueEventName('9lives', used), 'p_9lives');
  const long = uniqueEventName('x'.repeat(100), used);
  assert.equal(long.length, 63);
  const long2 = uniqueEventName('x'.repeat(100), used);
  assert.equal(long2.length, 63);
  assert.ok(long2.endsWith('_2'));
});

test('compiled before any agent runs, a definition is bound to the session group when sent', () => {
  const unbound = {
    kind: 'r' as const,
    group: UNBOUND_GROUP,
    event: 'f_return',
    target: { type: 'uprobe' as const, path: '/opt/a_b/x', offset: 0x10n },
    args: [{ name: 'v', fetch: '$retval', type: 's64' }],
  };
  assert.equal(formatDefinition(unbound), 'r:probelens_unbound/f_return /opt/a_b/x:0x10 v=$retval:s64');
  assert.equal(formatDefinition(bindGroup(unbound, group)), 'r:probelens_1234_ab12/f_return /opt/a_b/x:0x10 v=$retval:s64');
  // Only a real session group is accepted.
  assert.throws(() => bindGroup(unbound, 'other/x'), DefinitionError);
  assert.throws(() => bindGroup(unbound, UNBOUND_GROUP), DefinitionError);
});

test('group names: the agent’s probelens_<pid>_<nsdev>_<nsino>_<nonce> and the older probelens_<pid>_<nonce>; 64 characters or more refused', () => {
  for (const g of ['probelens_1234_4_effffffc_ab12cd34ef56', 'probelens_1_4_f0000152_abcdef', 'probelens_1234_ab12'])
    assert.ok(GROUP_PATTERN.test(g), g);
  const longest = `probelens_1_4_f0000152_${'a'.repeat(63 - 'probelens_1_4_f0000152_'.length)}`;
  assert.equal(longest.length, 63);
  assert.ok(GROUP_PATTERN.test(longest));
  for (const g of [`${longest}b`, 'probelens_1_4_f0000152_ab_cd', 'probelens_1_4_XYZ_ab', 'probelens__ab', 'probelens_1_4_f0000152_ab;rm'])
    assert.ok(!GROUP_PATTERN.test(g), g);
});

test("a module's kprobe is written MODULE:SYMBOL[+OFFSET]; a module name that could break the line is refused", () => {
  const d = { kind: 'p' as const, group, event: 'pfkey_create', args: [] };
  assert.equal(
    formatDefinition({ ...d, target: { type: 'kprobe', symbol: 'pfkey_create', offset: 0n, module: 'af_key' } }),
    `p:${group}/pfkey_create af_key:pfkey_create`,
  );
  assert.equal(
    formatDefinition({ ...d, target: { type: 'kprobe', symbol: 'pfkey_sendmsg', offset: 346n, module: 'af_key' } }),
    `p:${group}/pfkey_create af_key:pfkey_sendmsg+346`,
  );
  for (const module of ['', 'a b', 'x:y', 'a/b', 'm'.repeat(57)])
    assert.throws(() => formatDefinition({ ...d, target: { type: 'kprobe', symbol: 'f', offset: 0n, module } }), DefinitionError, module);
});

test('a kernel return probe is written rN: with its instances; the budget sizes them; nothing else takes one', () => {
  const ret = { kind: 'r' as const, group, event: 'k_ret', args: [{ name: 'ret', fetch: '$retval', type: 's64' }] };
  const target = { type: 'kprobe' as const, symbol: 'do_sys_openat2', offset: 0n };
  assert.equal(formatDefinition({ ...ret, target, maxactive: 4096 }), 'r4096:probelens_1234_ab12/k_ret do_sys_openat2 ret=$retval:s64');
  assert.equal(
    formatDefinition({ ...ret, target }),
    'r:probelens_1234_ab12/k_ret do_sys_openat2 ret=$retval:s64',
    "absent: the kernel's default",
  );
  for (const maxactive of [0, 4097, 1.5])
    assert.throws(() => formatDefinition({ ...ret, target, maxactive }), DefinitionError, String(maxactive));
  assert.throws(() => formatDefinition({ ...ret, kind: 'p', target, maxactive: 8 }), DefinitionError, 'an entry probe');
  assert.throws(
    () => formatDefinition({ ...ret, target: { type: 'uprobe', path: '/bin/x', offset: 0x10n }, maxactive: 8 }),
    DefinitionError,
    'a uretprobe has no maxactive',
  );
  // The kernel's most for each while a session's total stays within 65,536 instances; then shares, never below 64.
  assert.equal(kretprobeMaxactive(1), KRETPROBE_MAXACTIVE_MAX);
  assert.equal(kretprobeMaxactive(16), 4096);
  assert.equal(kretprobeMaxactive(17), 3855);
  assert.equal(kretprobeMaxactive(5000), 64);
});
