// The agent's reading of the kernel's per-point counts (read_profile), run for real under each shell on a stand-in
// tracefs directory: the definitions file and the profile are paired line by line, by one awk (mawk, busybox awk; no
// paste needed) or, where there is none, by paste, grep and sed; both ways give the same lines, and a pair naming two different
// events (another tracer's change between the two reads) is never taken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeAgent } from '../../../../src/core/tracefs/agentScript';

const AGENT_KERNEL_COUNTS = composeAgent('profile.sh');

const shells: Array<[string, string[]]> = [
  ['dash', ['dash']],
  ['busybox sh', ['busybox', 'sh']],
  ['bash', ['bash']],
];

/** The shell's own path: the function runs with a PATH of its tools only. */
const absolute = (cmd: string): string => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim() || cmd;

const G = 'probelens_42_4_effffffc_0123456789ab';
const PATH_A = '/opt/app/bin/server';

/** A uprobe definition line and its profile line (uprobe_profile's layout: two spaces, path, event padded, hits). */
const up = (group: string, ev: string, path: string, off: number, hits: number) => ({
  def: `p:${group}/${ev} ${path}:0x${off.toString(16).padStart(16, '0')} probelens_site=\\${off}:u32`,
  prof: `  ${path} ${ev.padEnd(44)} ${String(hits).padStart(15)}`,
});

/** Runs read_profile PREFIX against a tracefs stand-in holding `files`: [status, PROF] with the given awk (or none). */
function readProfile(
  shell: string[],
  files: Record<string, string>,
  prefix: string,
  awk: 'mawk' | 'busybox' | 'none',
  show: 'PROF' | 'KMISS' = 'PROF',
): [number, string] {
  const dir = mkdtempSync(join(tmpdir(), 'pl-profile-'));
  try {
    const t = join(dir, 'tracing');
    mkdirSync(t);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(t, name), text);
    // A PATH of the tools the function uses: awk as asked and no paste, or paste and no awk.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    for (const tool of awk === 'none' ? ['paste', 'grep', 'sed'] : ['grep', 'sed']) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
    if (awk === 'mawk') symlinkSync('/usr/bin/mawk', join(bin, 'awk'));
    if (awk === 'busybox') writeFileSync(join(bin, 'awk'), '#!/bin/sh\nexec /usr/bin/busybox awk "$@"\n', { mode: 0o755 });
    const script = `${AGENT_KERNEL_COUNTS}\nT=${t}\nread_profile "$1"\nst=$?\nprintf '%s\\n' "$st" "$${show}"\n`;
    const r = spawnSync(absolute(shell[0]), [...shell.slice(1), '-c', script, 'probelens-agent', prefix], {
      encoding: 'utf8',
      env: { PATH: bin },
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const [st, ...prof] = r.stdout.replace(/\n$/, '').split('\n');
    return [Number(st), prof.join('\n')];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const AWKS = ['mawk', 'busybox', 'none'] as const;

test('read_profile pairs each point of ours with its profile line, the same by awk or by paste, under each shell', () => {
  // Ours interleaved with another tracer's events on the same binary (same event names), and a line-probe event.
  const lines = [
    up('other_9', 'hot', PATH_A, 0x1000, 5),
    up(G, 'hot', PATH_A, 0x1000, 7),
    up(G, 'hot', PATH_A, 0x2040, 0),
    up('other_9', 'cold', PATH_A, 0x3000, 1),
    up(G, 'hot', PATH_A, 0x5000, 1234567),
    up(G, 'main_L42', PATH_A, 0x6000, 3),
  ];
  const files = { uprobe_events: lines.map((l) => `${l.def}\n`).join(''), uprobe_profile: lines.map((l) => `${l.prof}\n`).join('') };
  const all = [1, 2, 4, 5].map((i) => lines[i].prof).join('\n');
  const hot = [1, 2, 4].map((i) => lines[i].prof).join('\n');
  for (const [name, shell] of shells)
    for (const awk of AWKS) {
      assert.deepEqual(readProfile(shell, files, `${G}/`, awk), [0, all], `${name}, awk ${awk}: the group`);
      assert.deepEqual(readProfile(shell, files, `${G}/hot `, awk), [0, hot], `${name}, awk ${awk}: one event`);
      assert.deepEqual(readProfile(shell, files, 'probelens_7_/', awk), [0, ''], `${name}, awk ${awk}: none of ours`);
    }
});

test('read_profile takes no pair that names two events (a file shifted by another tracer), no point of ours without its count, and compares as far as both files go', () => {
  const lines = [up(G, 'a', PATH_A, 0x10, 1), up('other_9', 'b', PATH_A, 0x20, 2), up(G, 'c', PATH_A, 0x30, 3)];
  // The profile read after another tracer removed its event: every later line is one up.
  const shifted = {
    uprobe_events: lines.map((l) => `${l.def}\n`).join(''),
    uprobe_profile: `${lines[0].prof}\n${lines[2].prof}\n`,
  };
  // An event added at the end between the reads: the definitions file is longer, the pairs before it agree.
  const added = {
    uprobe_events: [...lines, up('other_9', 'd', PATH_A, 0x40, 0)].map((l) => `${l.def}\n`).join(''),
    uprobe_profile: lines.map((l) => `${l.prof}\n`).join(''),
  };
  // The profile read shorter than the definitions, ours the last: that point has no count, and the read is refused.
  const short = {
    uprobe_events: lines.map((l) => `${l.def}\n`).join(''),
    uprobe_profile: `${lines[0].prof}\n${lines[1].prof}\n`,
  };
  for (const [name, shell] of shells)
    for (const awk of AWKS) {
      // (A refused read is tried 100 times: once per way of pairing is enough, under dash.)
      if (name === 'dash') assert.deepEqual(readProfile(shell, shifted, `${G}/`, awk), [1, ''], `${name}, awk ${awk}: shifted`);
      if (name === 'dash') assert.deepEqual(readProfile(shell, short, `${G}/`, awk), [1, ''], `${name}, awk ${awk}: short`);
      assert.deepEqual(readProfile(shell, added, `${G}/`, awk), [0, `${lines[0].prof}\n${lines[2].prof}`], `${name}, awk ${awk}: added`);
    }
});

test('read_profile reads kprobe_profile for a session of kernel probes, as "kernel EVENT HITS" (its misses are no hits)', () => {
  const files = {
    uprobe_events: `${up(G, 'u', PATH_A, 0x10, 4).def}\n`,
    uprobe_profile: `${up(G, 'u', PATH_A, 0x10, 4).prof}\n`,
    kprobe_events: `p:${G}/do_sys_openat2 do_sys_openat2+0 dfd=%di:s32\nr10:${G}/do_sys_openat2_ret do_sys_openat2 retval=$retval:s64\np:other_9/vfs_read vfs_read+0\n`,
    kprobe_profile: `  ${'do_sys_openat2'.padEnd(44)} ${'17'.padStart(15)} ${'0'.padStart(15)}\n  ${'do_sys_openat2_ret'.padEnd(44)} ${'16'.padStart(15)} ${'1'.padStart(15)}\n  ${'vfs_read'.padEnd(44)} ${'9'.padStart(15)} ${'0'.padStart(15)}\n`,
  };
  const want = `${up(G, 'u', PATH_A, 0x10, 4).prof}\nkernel do_sys_openat2 17\nkernel do_sys_openat2_ret 16`;
  for (const [name, shell] of shells)
    for (const awk of AWKS) {
      assert.deepEqual(readProfile(shell, files, `${G}/`, awk), [0, want], `${name}, awk ${awk}`);
      // The misses of ours, apart: the return probe's one missed call (every instance in use); none of the other's.
      assert.deepEqual(readProfile(shell, files, `${G}/`, awk, 'KMISS'), [0, 'do_sys_openat2_ret 1'], `${name}, awk ${awk}: misses`);
    }
});
