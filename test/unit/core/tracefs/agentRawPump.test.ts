// The binary stream's page pump (raw_pump), run for real under each shell on a stand-in instance directory whose
// CPU always holds an entry: told by USR1 (STOP's drain), it ends after the round it is in, that round's end written
// last, so the agent can wait for its end instead of guessing a grace period.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeAgent } from '../../../../src/core/tracefs/agentScript';

const AGENT_RAW_STREAM = composeAgent('raw.sh');

const shells: Array<[string, string[]]> = [
  ['dash', ['dash']],
  ['busybox sh', ['busybox', 'sh']],
  ['bash', ['bash']],
];

const PAGE = 4096;
const ROUND_END = `PLRAWEND${'0'.repeat(56)}`;

test('the pump ends after its round when told (USR1), with the round end last and no page cut', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pl-pump-'));
  try {
    const instance = join(dir, 'instance');
    mkdirSync(join(instance, 'per_cpu', 'cpu0'), { recursive: true });
    // The stats always say one entry, so every round copies the "buffer" (a page of a regular file) again.
    writeFileSync(
      join(instance, 'per_cpu', 'cpu0', 'stats'),
      'entries: 1\noverrun: 0\ncommit overrun: 0\nbytes: 0\ndropped events: 0\nnow ts: 12.5\n',
    );
    writeFileSync(join(instance, 'per_cpu', 'cpu0', 'trace_pipe_raw'), Buffer.alloc(PAGE, 0xab));
    for (const [name, shell] of shells) {
      const out = join(dir, `out-${name.replace(/ /g, '-')}`);
      const script = `${AGENT_RAW_STREAM}
I=${instance}
RAWCPUS=0
RAWDD=bs=65536
raw_pump $$ > ${out} &
P=$!
sleep 0.3
kill -USR1 $P
wait $P
echo ended
`;
      const started = Date.now();
      const r = spawnSync(shell[0], [...shell.slice(1), '-c', script], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.error, undefined, `${name}: the pump did not end when told (${r.error?.message})`);
      assert.equal(r.stdout, 'ended\n', `${name}: ${r.stderr}`);
      assert.ok(Date.now() - started < 15_000, name);
      const bytes = readFileSync(out);
      // Rounds of: the CPU's header (64 bytes), its page, the round's end (64 bytes).
      const round = 64 + PAGE + 64;
      assert.ok(bytes.length >= round, `${name}: at least one round (${bytes.length} bytes)`);
      assert.equal(bytes.length % round, 0, `${name}: only whole rounds (${bytes.length} bytes)`);
      assert.equal(bytes.subarray(bytes.length - 64).toString('latin1'), ROUND_END, `${name}: the round's end is last`);
      assert.equal(bytes.subarray(0, 8).toString('latin1'), 'PLRAWCPU', name);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
