// Kernel probe definitions and records (src/core/probes/kprobe.ts): the text kprobe_events takes, and the records
// the kernel prints for it, as seen on Debian 12's cloud kernel (6.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KprobeSpecError, kprobeArgs, kprobeDefinition, parseKprobeRecord } from '../../../../src/core/probes/kprobe';
import { DO_SYS_OPENAT2 } from '../../../vm/kprobeHarness';
import { plainData } from '../../../helpers/plain';

test('entry definitions are symbol-relative, with arguments by name, user strings and members through pointers', () => {
  const args = kprobeArgs(DO_SYS_OPENAT2, ['dfd', 'filename:ustring', 'how->flags', 'how->mode:x64', 'filename:str'], 'entry');
  assert.deepEqual(plainData(args), [
    { name: 'dfd', fetch: '$arg1', type: 's32' },
    { name: 'filename', fetch: '+0($arg2)', type: 'ustring' },
    { name: 'how_flags', fetch: '+0($arg3)', type: 'u64' },
    { name: 'how_mode', fetch: '+8($arg3)', type: 'x64' },
    // `str` picks the reader from the pointer: filename is __user.
    { name: 'filename', fetch: '+0($arg2)', type: 'ustring' },
  ]);
  assert.equal(
    kprobeDefinition({ group: 'g', event: 'e', symbol: 'do_sys_openat2', offset: 0n, kind: 'entry', args: args.slice(0, 3) }),
    'p:g/e do_sys_openat2+0 dfd=$arg1:s32 filename=+0($arg2):ustring how_flags=+0($arg3):u64',
  );
});

test('offsets stay exact beyond 2^53; clones and module symbols are named as the kernel names them', () => {
  const big = (1n << 60n) + 1n;
  assert.equal(
    kprobeDefinition({ group: 'g', event: 'e', symbol: 'f', offset: big, kind: 'entry', args: [] }),
    `p:g/e f+${big.toString()}`,
  );
  assert.equal(
    kprobeDefinition({ group: 'g', event: 'e', symbol: 'fdget_pos.isra.0', module: 'ext4', offset: 37n, kind: 'entry', args: [] }),
    'p:g/e ext4:fdget_pos.isra.0+37',
  );
});

test('return definitions take $retval only, at no offset', () => {
  const ret = kprobeArgs(DO_SYS_OPENAT2, ['$retval'], 'return');
  assert.equal(
    kprobeDefinition({ group: 'g', event: 'r', symbol: 'do_sys_openat2', offset: 0n, kind: 'return', args: ret }),
    'r:g/r do_sys_openat2 retval=$retval:s64',
  );
  assert.throws(() => kprobeArgs(DO_SYS_OPENAT2, ['dfd'], 'return'), KprobeSpecError);
  assert.throws(() => kprobeArgs(DO_SYS_OPENAT2, ['$retval'], 'entry'), KprobeSpecError);
  assert.throws(() => kprobeDefinition({ group: 'g', event: 'r', symbol: 'f', offset: 4n, kind: 'return', args: [] }), /takes no offset/);
});

test('refused: unknown parameters and members, strings from non-pointers, names the kernel would not take', () => {
  assert.throws(() => kprobeArgs(DO_SYS_OPENAT2, ['mode'], 'entry'), /no parameter mode \(the function has dfd, filename, how\)/);
  assert.throws(() => kprobeArgs(DO_SYS_OPENAT2, ['how->nope'], 'entry'), /struct open_how has no member nope/);
  assert.throws(() => kprobeArgs(DO_SYS_OPENAT2, ['dfd->x'], 'entry'), /not a pointer to a struct/);
  assert.throws(() => kprobeArgs(DO_SYS_OPENAT2, ['dfd:ustring'], 'entry'), /cannot be read as a string/);
  assert.throws(() => kprobeDefinition({ group: 'g', event: 'e', symbol: 'a b', offset: 0n, kind: 'entry', args: [] }), KprobeSpecError);
  assert.throws(() => kprobeDefinition({ group: 'g', event: 'e', symbol: 'f', offset: -1n, kind: 'entry', args: [] }), KprobeSpecError);
});

test('records: entry and return lines of a 6.1 kernel parse, strings stay whole', () => {
  const entry = parseKprobeRecord(
    '              sh-231     [000] d....   118.123456: openat2: (do_sys_openat2+0x0/0x160) dfd=-100 filename="/tmp/a b=c" how_flags=0x441',
    ['dfd', 'filename', 'how_flags'],
  );
  assert.deepEqual(plainData(entry), {
    comm: 'sh',
    pid: 231,
    cpu: 0,
    ts: 118.123456,
    event: 'openat2',
    at: 'do_sys_openat2+0x0/0x160',
    fields: { dfd: '-100', filename: '/tmp/a b=c', how_flags: '0x441' },
  });
  const ret = parseKprobeRecord(
    '  sh-231  (    231) [000] d..1.   118.2: openat2_ret: (do_sys_open+0x59/0xa0 <- do_sys_openat2) retval=3',
    ['retval'],
  );
  assert.equal(ret?.tgid, 231);
  assert.equal(ret?.at, 'do_sys_open+0x59/0xa0');
  assert.equal(ret?.returnedFrom, 'do_sys_openat2');
  assert.deepEqual(plainData(ret?.fields), { retval: '3' });
  assert.equal(parseKprobeRecord('CPU:0 [LOST 3 EVENTS]', []), null);
});

test('members of a struct embedded in one read through a pointer add up (`p->a.b`); a type no fetch reads is named', () => {
  const params = [
    {
      name: 'f',
      index: 1,
      type: {
        kind: 'pointer' as const,
        size: 8 as const,
        user: false,
        to: {
          kind: 'struct' as const,
          name: 'file',
          members: [
            {
              name: 'f_path',
              offset: 64,
              type: {
                kind: 'struct' as const,
                name: 'path',
                members: [{ name: 'dentry', offset: 8, type: { kind: 'pointer' as const, size: 8 as const, user: false } }],
              },
            },
            { name: 'f_x', offset: 8, type: { kind: 'other' as const, what: 'the bitfield f_x' } },
          ],
        },
      },
    },
  ];
  assert.deepEqual(plainData(kprobeArgs(params, ['f->f_path.dentry'], 'entry')), [
    { name: 'f_f_path_dentry', fetch: '+72($arg2)', type: 'x64' },
  ]);
  assert.throws(() => kprobeArgs(params, ['f.f_path'], 'entry'), /not a struct read through a pointer/);
  assert.throws(() => kprobeArgs(params, ['f->f_x'], 'entry'), /the bitfield f_x cannot be fetched as one value/);
  assert.throws(() => kprobeArgs(params, ['f->'], 'entry'), /not NAME, NAME->MEMBER/);
});
