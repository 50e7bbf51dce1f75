// A remembered password or passphrase: offered first; once rejected, forgotten before the user is asked again;
// kept only when the user says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rememberedSecret, type SecretAnswer, type SecretStore } from '../../../../src/core/ssh/rememberedSecret';

function store(initial: Record<string, string> = {}): SecretStore & { data: Map<string, string> } {
  const data = new Map(Object.entries(initial));
  return {
    data,
    get: async (k) => data.get(k),
    store: async (k, v) => void data.set(k, v),
    delete: async (k) => void data.delete(k),
  };
}

function asker(answer: SecretAnswer | undefined) {
  const calls: boolean[] = [];
  return { calls, ask: async (retry: boolean) => (calls.push(retry), answer) };
}

test('the first attempt uses the remembered answer without asking', async () => {
  const s = store({ 'ssh:web1': 'hunter2' });
  const a = asker({ value: 'other', remember: false });
  assert.equal(await rememberedSecret(s, 'ssh:web1', 1, a.ask), 'hunter2');
  assert.deepEqual(a.calls, []);
});

test('a rejected answer is forgotten before the user is asked again, as a retry', async () => {
  const s = store({ 'ssh:web1': 'old' });
  const a = asker({ value: 'new', remember: false });
  assert.equal(await rememberedSecret(s, 'ssh:web1', 2, a.ask), 'new');
  assert.deepEqual(a.calls, [true]);
  assert.equal(s.data.has('ssh:web1'), false, 'the rejected password is no longer offered');
});

test('nothing remembered: the user is asked; the answer is kept only when they say so; declining gives undefined', async () => {
  const s = store();
  const keep = asker({ value: 'pw', remember: true });
  assert.equal(await rememberedSecret(s, 'k', 1, keep.ask), 'pw');
  assert.deepEqual(keep.calls, [false]);
  assert.equal(s.data.get('k'), 'pw');

  const s2 = store();
  assert.equal(await rememberedSecret(s2, 'k', 1, asker({ value: 'pw', remember: false }).ask), 'pw');
  assert.equal(s2.data.size, 0);

  assert.equal(await rememberedSecret(store({ k: 'x' }), 'k', 3, asker(undefined).ask), undefined);
});
