// The build-id refusal is one sentence naming both ids, for a program, the running kernel and a loaded module: the
// agent's reply (the bytes it read) is the target's id, never its reworded message nested inside another.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTargetBuild } from '../../../../src/core/session/buildCheck';
import { readBinaryIdentity } from '../../../../src/core/index/identity';
import { AgentError } from '../../../../src/core/tracefs/agentClient';
import { describeAgentError } from '../../../../src/core/tracefs/agentReplies';
import type { BinaryIndex } from '../../../../src/core/index/binaryIndex';
import type { CompiledProbe } from '../../../../src/core/probes/compiler';
import { fixtureOrSkip } from '../../../helpers/fixtures';

const OTHER = '256b7d0a1c2e3f405162738495a6b7c8d9eaf001';

/** An agent whose BUILDID replies as the real one does when the bytes differ (`ERR BUILDID EMISMATCH <hex>`). */
const differs = (got: string) => ({
  checkBuildId: async (): Promise<void> => {
    throw new AgentError('BUILDID', 'EMISMATCH', describeAgentError('BUILDID', 'EMISMATCH', got, []), [], got);
  },
});

const probe = (target: CompiledProbe['definition']['target']): CompiledProbe =>
  ({ definition: { kind: 'p', group: 'g', event: 'e', target, args: [] } }) as unknown as CompiledProbe;

test('another build on the target is refused in one sentence with both build-ids', async (t) => {
  const f = await fixtureOrSkip(t, 'entries');
  if (!f) return;
  const id = readBinaryIdentity(f.path);
  assert.ok(id.buildId, 'the fixture has a GNU build-id');
  const index = { path: f.path, buildId: id.buildId } as BinaryIndex;
  const cases: Array<[CompiledProbe, string]> = [
    [
      probe({ type: 'uprobe', path: '/srv/app', offset: 0x1000n }),
      `binary on vm differs from the local build (/srv/app: its build-id is ${OTHER}, ${f.path} is build ${id.buildId}): rebuild or deploy it, or pass --no-build-id-check`,
    ],
    [
      probe({ type: 'kprobe', symbol: 'do_sys_openat2', offset: 0n }),
      `kernel on vm differs from the local vmlinux (/sys/kernel/notes: the running kernel's build-id is ${OTHER}, ${f.path} is build ${id.buildId}): use the vmlinux of the kernel it runs, or pass --no-build-id-check`,
    ],
    [
      probe({ type: 'kprobe', symbol: 'pfkey_seq_show', offset: 0n, module: 'af_key' }),
      `module af_key on vm differs from the local .ko (/sys/module/af_key/notes/.note.gnu.build-id: the loaded module's build-id is ${OTHER}, ${f.path} is build ${id.buildId}): use the .ko (with its debug information) of the module it runs, or pass --no-build-id-check`,
    ],
  ];
  for (const [p, sentence] of cases)
    await assert.rejects(checkTargetBuild(differs(OTHER), 'vm', index, [p], '/srv/app'), (e: Error) => {
      assert.equal(e.message, sentence);
      return true;
    });
  // A file that ends before its note: said, not shown as an empty id.
  await assert.rejects(
    checkTargetBuild(differs(''), 'vm', index, [probe({ type: 'uprobe', path: '/srv/app', offset: 0n })], '/srv/app'),
    /\/srv\/app: its build-id is absent \(the file ends before the note\), /,
  );
});
