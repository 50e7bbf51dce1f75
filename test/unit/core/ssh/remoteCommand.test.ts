import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { remoteCommand } from '../../../../src/core/ssh/remoteCommand';

test('plain-word argv goes on the command line as is (sudo -n prefixed when asked)', () => {
  assert.deepEqual(remoteCommand(['uname', '-s'], false), { command: 'uname -s', stdinPrefix: Buffer.alloc(0) });
  assert.equal(remoteCommand(['id', '-u'], true).command, 'sudo -n -- id -u');
});

test('any other argv travels on stdin behind a fixed bootstrap that every login shell passes through', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pl-remcmd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const canary = join(dir, 'CANARY');
  const argv = [
    'sh',
    '-c',
    'printf "%s|" "$@"; cat',
    'argv0',
    "it's",
    'back\\slash\\\\two',
    'line1\nline2',
    'bang!',
    `$(touch ${canary})`,
    `\`touch ${canary}\``,
    '*',
    '',
    'ünï',
  ];
  const rc = remoteCommand(argv, false);
  // Nothing a shell could read differently: no newline, backslash, history `!`, backquote or double-quote tricks.
  assert.doesNotMatch(rc.command, /[\n\\!`]/);
  const shells = ['/bin/sh', '/bin/bash', '/bin/dash', '/usr/bin/zsh', '/bin/busybox'].filter((s) => existsSync(s));
  assert.ok(shells.length >= 2, `found ${shells.join(', ')}`);
  for (const shell of shells) {
    // sshd runs `$SHELL -c COMMAND` with the channel as stdin: the same here, followed by the program's own input.
    const args = shell.endsWith('busybox') ? ['sh', '-c', rc.command] : ['-c', rc.command];
    const r = spawnSync(shell, args, { input: Buffer.concat([rc.stdinPrefix, Buffer.from('rest of stdin\n')]), encoding: 'utf8' });
    assert.equal(r.status, 0, `${shell}: ${r.stderr}`);
    assert.equal(
      r.stdout,
      argv
        .slice(4)
        .map((a) => `${a}|`)
        .join('') + 'rest of stdin\n',
      shell,
    );
  }
  assert.equal(existsSync(canary), false, 'an argument was executed');
  assert.match(remoteCommand(argv, true).command, /^sudo -n -- sh -c '/);
});
