import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSpec, SpecSyntaxError, tokenizeSpec } from '../../../../src/core/probes/spec';

test('function entry with typed, renamed and nested arguments', () => {
  const s = parseSpec('deposit acct->balance amount:s64 who=acct->owner:string cfg.limits.max arr[3]');
  assert.deepEqual(s.point, {
    kind: 'function',
    func: 'deposit',
    src: undefined,
    relLine: undefined,
    offset: undefined,
    ret: false,
    glob: false,
  });
  assert.deepEqual(
    s.args.map((a) => a.name),
    ['acct_balance', 'amount', 'who', 'cfg_limits_max', 'arr_3'],
  );
  const who = s.args[2];
  assert.equal(who.kind, 'var');
  if (who.kind === 'var') {
    assert.equal(who.base, 'acct');
    assert.deepEqual(who.path, [{ op: '->', field: 'owner' }]);
    assert.equal(who.type, 'string');
  }
});

test('return probes, relative lines, offsets and source-qualified functions', () => {
  assert.deepEqual(parseSpec('add%return $retval').point, {
    kind: 'function',
    func: 'add',
    src: undefined,
    relLine: undefined,
    offset: undefined,
    ret: true,
    glob: false,
  });
  assert.equal(parseSpec('add%return $retval').args[0].name, 'retval');
  const p = parseSpec('helper@src/util.c:3').point;
  assert.deepEqual(p, { kind: 'function', func: 'helper', src: 'src/util.c', relLine: 3, offset: undefined, ret: false, glob: false });
  const o = parseSpec('helper+0x10').point;
  assert.equal(o.kind === 'function' && o.offset, 16);
});

test('absolute source lines are told apart from dotted Go function names', () => {
  assert.deepEqual(parseSpec('calls.c:42').point, { kind: 'line', src: 'calls.c', line: 42 });
  assert.deepEqual(parseSpec('/home/u/p/main.go:7 x').point, { kind: 'line', src: '/home/u/p/main.go', line: 7 });
  const g = parseSpec('main.add:3').point;
  assert.equal(g.kind, 'function');
  assert.equal(g.kind === 'function' && g.func, 'main.add');
  assert.equal(g.kind === 'function' && g.relLine, 3);
  const m = parseSpec('main.(*Account).Deposit').point;
  assert.equal(m.kind === 'function' && m.func, 'main.(*Account).Deposit');
});

test('C++ scopes and templates stay whole', () => {
  const p = parseSpec('shapes::Circle::area%return $retval').point;
  assert.equal(p.kind === 'function' && p.func, 'shapes::Circle::area');
  assert.equal(p.kind === 'function' && p.ret, true);
  assert.deepEqual(
    tokenizeSpec('maxOf<std::pair<int, long> > a b').map((t) => t.token),
    ['maxOf<std::pair<int, long> >', 'a', 'b'],
  );
  const t = parseSpec('ns::maxOf<int>:2 a');
  assert.equal(t.point.kind === 'function' && t.point.func, 'ns::maxOf<int>');
  assert.equal(t.point.kind === 'function' && t.point.relLine, 2);
});

test('globs, USDT points and raw fetchargs', () => {
  const g = parseSpec('calls_*').point;
  assert.equal(g.kind === 'function' && g.glob, true);
  assert.deepEqual(parseSpec('sdt:myapp:request_start').point, { kind: 'usdt', provider: 'myapp', name: 'request_start' });
  const raw = parseSpec('f %di len=+8(%sp):s32 s=+0(%di):string').args;
  assert.deepEqual(
    raw.map((a) => [a.kind, a.name]),
    [
      ['raw', 'di'],
      ['raw', 'len'],
      ['raw', 's'],
    ],
  );
});

test('errors say where and what to do', () => {
  const bad: [string, RegExp][] = [
    ['', /empty probe spec/],
    ['f x:float', /unsupported type 'float'/],
    ['f %di;rm', /not a valid tracefs fetch argument/],
    ['f +0(%di)$(touch /tmp/x)', /not a valid tracefs fetch argument/],
    ['f a a', /both named 'a'/],
    ['f $retval', /only available on FUNC%return/],
    ['calls.c:12%return', /%return applies to functions/],
    ['f:3%return', /only one of/],
    ['f%entry', /unknown suffix/],
    ['sdt:onlyprovider', /sdt:PROVIDER:NAME/],
    ['f a-b', /unexpected '-b'/],
    ['f x=$params', /cannot be renamed/],
    ['tmpl<int a', /unbalanced/],
    ['f calls.c:abc', /unsupported type/],
  ];
  for (const [spec, re] of bad) {
    assert.throws(
      () => parseSpec(spec),
      (e: unknown) => e instanceof SpecSyntaxError && re.test(e.message),
      spec,
    );
  }
});

test('MODULE:FUNC names a kernel module function; FUNC:LINE, SRC:LINE, Go and C++ names are not taken for one', () => {
  const p = (text: string) => parseSpec(text).point;
  assert.deepEqual(p('af_key:pfkey_create'), {
    kind: 'function',
    func: 'pfkey_create',
    module: 'af_key',
    src: undefined,
    relLine: undefined,
    offset: undefined,
    ret: false,
    glob: false,
  });
  assert.deepEqual(p('af_key:pfkey_create%return'), {
    kind: 'function',
    func: 'pfkey_create',
    module: 'af_key',
    src: undefined,
    relLine: undefined,
    offset: undefined,
    ret: true,
    glob: false,
  });
  // kallsyms writes a module's `-` as `_`; a line after the function still works.
  assert.deepEqual(p('nf-conntrack:nf_ct_delete:3'), {
    kind: 'function',
    func: 'nf_ct_delete',
    module: 'nf_conntrack',
    src: undefined,
    relLine: 3,
    offset: undefined,
    ret: false,
    glob: false,
  });
  assert.equal((p('8021q:vlan_dev_init') as { module?: string }).module, '8021q');
  assert.equal((p('pfkey_create:3') as { module?: string }).module, undefined);
  assert.deepEqual(p('af_key.c:150'), { kind: 'line', src: 'af_key.c', line: 150 });
  assert.equal((p('main.add:3') as { module?: string }).module, undefined);
  assert.equal((p('ns::f') as { func: string }).func, 'ns::f');
  assert.throws(() => parseSpec('af_key:pfkey_create:x'), SpecSyntaxError);
});
