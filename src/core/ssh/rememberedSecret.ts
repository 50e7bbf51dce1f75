// Passphrases and passwords the user chose to remember (the extension keeps them in VS Code's SecretStorage).
// A remembered answer is offered first; once the other side rejects it, it is forgotten before the user is asked
// again, so a changed or mistyped password does not keep failing.

export interface SecretStore {
  get(key: string): PromiseLike<string | undefined>;
  store(key: string, value: string): PromiseLike<void>;
  delete(key: string): PromiseLike<void>;
}

export interface SecretAnswer {
  value: string;
  remember: boolean;
}

/**
 * The answer for `key` at `attempt` (1 first; a later attempt means the previous answer was rejected): the
 * remembered value on attempt 1, else what `ask` gets from the user (`retry` when an earlier answer failed),
 * remembered when the user says so. Undefined when the user declines.
 */
export async function rememberedSecret(
  store: SecretStore,
  key: string,
  attempt: number,
  ask: (retry: boolean) => PromiseLike<SecretAnswer | undefined>,
): Promise<string | undefined> {
  if (attempt <= 1) {
    const kept = await store.get(key);
    if (kept !== undefined) return kept;
  } else {
    await store.delete(key);
  }
  const answer = await ask(attempt > 1);
  if (answer === undefined) return undefined;
  if (answer.remember) await store.store(key, answer.value);
  return answer.value;
}
