// The agent script's protocol checks that need no tracefs: run for real under each shell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_ARGV0, AGENT_FILES, AGENT_SCRIPT, composeAgent } from '../../../../src/core/tracefs/agentScript';

const shells: Array<[string, string[]]> = [
  ['dash', ['dash']],
  ['busybox sh', ['busybox', 'sh']],
  ['bash', ['bash']],
];

function run(shell: string[], input: string) {
  const r = spawnSync(shell[0], [...shell.slice(1), '-c', AGENT_SCRIPT, AGENT_ARGV0], { input, encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

test('the script is fixed text composed whole, evaluating nothing it receives', () => {
  assert.doesNotMatch(AGENT_SCRIPT, /^#include /m, 'every include was inlined');
  assert.doesNotMatch(AGENT_SCRIPT, /@lease\.p[ly]@/, 'both lease guards were inlined');
  for (const name of AGENT_FILES.slice(1)) assert.ok(AGENT_SCRIPT.includes(composeAgent(name)), `${name} is part of the agent`);
  assert.ok(!/\beval\b/.test(AGENT_SCRIPT), 'nothing received is ever evaluated');
  assert.ok(
    !/>\s*"\$T\/uprobe_events"/.test(AGENT_SCRIPT.replace(/>>\s*"\$T\/uprobe_events"/g, '')),
    'uprobe_events is only ever appended to',
  );
});

for (const [name, shell] of shells) {
  test(`${name}: parses, and refuses anything before a valid HELLO`, () => {
    const syntax = spawnSync(shell[0], [...shell.slice(1), '-n', '-c', AGENT_SCRIPT], { encoding: 'utf8' });
    assert.equal(syntax.status, 0, syntax.stderr);
    let r = run(shell, 'DEF p:x/y /bin/true:0x0\n');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^- ERR PROTO EPROTO expected HELLO$/m);
    r = run(shell, 'HELLO 1 $(touch)\n');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /ERR HELLO EPROTO bad nonce/);
    r = run(shell, 'HELLO 9 abcdef12\n');
    assert.match(r.stderr, /^abcdef12 ERR HELLO EVERSION agent speaks protocol 1, client asked for 9$/m);
    assert.equal(r.stdout, '', 'stdout is reserved for trace_pipe');
  });
}

test('the file watcher checks every 0.025 s at most apart (plus the check’s own time): a hit waits that long for its check', () => {
  const fwi = /^FWI=(\S+)$/m.exec(AGENT_SCRIPT);
  assert.ok(fwi, 'the script sets FWI');
  assert.ok(Number(fwi[1]) > 0 && Number(fwi[1]) <= 0.025, `FWI=${fwi[1]}`);
  assert.match(AGENT_SCRIPT, /^\s*sleep "\$FWI"/m, 'the loop sleeps FWI between checks');
});

test('the pump writes a drain’s pages in 64 KiB blocks where dd takes ibs/obs, else page by page', () => {
  const fn = /^raw_dd_blocks\(\) \{\n[\s\S]*?\n\}\n/m.exec(AGENT_SCRIPT);
  assert.ok(fn, 'the script defines raw_dd_blocks');
  const def = fn[0];
  assert.ok(AGENT_SCRIPT.includes('dd $RAWDD < "$I/per_cpu/cpu$c/trace_pipe_raw"'), 'the pump reads with its operands');
  // A dd that knows no ibs/obs (a trimmed busybox build), first in PATH.
  const dir = mkdtempSync(join(tmpdir(), 'pl-dd-'));
  try {
    writeFileSync(
      join(dir, 'dd'),
      '#!/bin/sh\nfor a do case "$a" in ibs=*|obs=*) echo "dd: unknown operand $a" >&2; exit 1 ;; esac; done\nexec cat\n',
      {
        mode: 0o755,
      },
    );
    for (const [name, shell] of shells) {
      const blocks = (path: string): string =>
        spawnSync(shell[0], [...shell.slice(1), '-c', `${def}raw_dd_blocks 4096`], {
          encoding: 'utf8',
          env: { ...process.env, PATH: path },
        }).stdout;
      assert.equal(blocks(process.env.PATH ?? '/usr/bin:/bin'), 'ibs=4096 obs=65536\n', name);
      assert.equal(blocks(`${dir}:${process.env.PATH ?? '/usr/bin:/bin'}`), 'bs=65536\n', name);
    }
    // Reblocked, the bytes are the same: three pages and a short one in, the same out, in one write.
    const pages = Buffer.alloc(4096 * 3 + 100, 7);
    const out = spawnSync('dd', ['ibs=4096', 'obs=65536'], { input: pages });
    assert.deepEqual(out.stdout, pages);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
