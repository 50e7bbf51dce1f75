// User authentication in OpenSSH's order: the agent's keys (unless IdentitiesOnly), identity files
// (encrypted ones unlocked through the passphrase callback), keyboard-interactive, then password — each only
// when the server still offers that method. Every attempt is remembered for the "permission denied" message.
// Tests: test/integration/ssh.test.ts, test/integration/sshPassword.test.ts
import { readFileSync } from 'node:fs';
import type { AnyAuthMethod, AuthHandlerMiddleware, AuthenticationType } from 'ssh2';
import type { ResolvedHost } from './config';
import type { AuthAttempt } from './errors';
import { loadSsh2 } from './ssh2';

export interface AuthCallbacks {
  /** Asked for an encrypted identity file's passphrase; undefined skips the key. `attempt` starts at 1. */
  passphrase?: (keyFile: string, attempt: number) => string | undefined | Promise<string | undefined>;
  /**
   * Asked for the password (password and keyboard-interactive methods); undefined skips them. `attempt` starts at
   * 1; a later attempt means the server rejected the previous answer (so a remembered one must be forgotten).
   */
  password?: (user: string, host: string, attempt: number) => string | undefined | Promise<string | undefined>;
}

interface AuthState extends AuthCallbacks {
  /** Called around local work (reading and decrypting keys, asking the user), which the login timeout excludes. */
  localWork?: { begin(): void; end(): void };
  agent: string | undefined;
  tried: AuthAttempt[];
  serverMethods: string[];
  where: string;
  log?: (msg: string) => void;
}

type Step = () => Promise<AnyAuthMethod | undefined>;

interface PlannedStep {
  method: AuthenticationType;
  detail?: string;
  run: Step;
  /** After the server refused this step: whether to run it again (a rejected password, tries left). */
  again?: () => boolean;
}

const PASSPHRASE_TRIES = 3;
// OpenSSH's NumberOfPasswordPrompts default.
const PASSWORD_TRIES = 3;

function isEncryptedKeyError(e: Error): boolean {
  return /encrypted|passphrase/i.test(e.message);
}

async function loadIdentity(file: string, explicit: boolean, st: AuthState, user: string): Promise<AnyAuthMethod | undefined> {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (e) {
    if (explicit) st.log?.(`identity file ${file} not readable: ${(e as Error).message}`);
    return undefined;
  }
  let parsed = loadSsh2().utils.parseKey(data);
  if (!(parsed instanceof Error)) return { type: 'publickey', username: user, key: data };
  if (!isEncryptedKeyError(parsed)) {
    st.log?.(`identity file ${file} is not a private key ssh2 can read (${parsed.message}); skipped`);
    return undefined;
  }
  if (!st.passphrase) {
    st.log?.(`identity file ${file} is encrypted and no passphrase prompt is available; skipped`);
    return undefined;
  }
  for (let attempt = 1; attempt <= PASSPHRASE_TRIES; attempt++) {
    const pass = await st.passphrase(file, attempt);
    if (pass === undefined) return undefined;
    parsed = loadSsh2().utils.parseKey(data, pass);
    // The decrypted key itself goes to ssh2: decrypting again (bcrypt KDF) would cost as much a second time.
    if (!(parsed instanceof Error)) return { type: 'publickey', username: user, key: parsed };
    st.log?.(`wrong passphrase for ${file}`);
  }
  return undefined;
}

function steps(hop: ResolvedHost, st: AuthState): PlannedStep[] {
  const user = hop.user;
  const out: PlannedStep[] = [];
  if (st.agent && !hop.identitiesOnly) {
    const agent = st.agent;
    out.push({ method: 'agent', detail: `ssh-agent ${agent}`, run: async () => ({ type: 'agent', username: user, agent }) });
  }
  for (const file of hop.identityFiles) {
    out.push({ method: 'publickey', detail: file, run: () => loadIdentity(file, hop.identityFilesExplicit, st, user) });
  }
  // One answer serves both password methods until the server rejects it (it was sent and the login went on).
  const pw = { value: undefined as string | undefined, attempt: 0, sent: false };
  const askPassword = async (): Promise<string | undefined> => {
    if (pw.attempt > 0 && !pw.sent) return pw.value;
    if (pw.attempt >= PASSWORD_TRIES || !st.password) return undefined;
    pw.attempt++;
    pw.sent = false;
    pw.value = await st.password(user, hop.hostName, pw.attempt);
    return pw.value;
  };
  const again = () => pw.sent && pw.attempt < PASSWORD_TRIES && pw.value !== undefined;
  if (st.password && hop.kbdInteractiveAuthentication) {
    out.push({
      method: 'keyboard-interactive',
      run: async () => {
        const answer = await askPassword();
        if (answer === undefined) return undefined;
        return {
          type: 'keyboard-interactive',
          username: user,
          // Only the usual single hidden "Password:" prompt can be answered without a terminal.
          prompt: (_name, _instr, _lang, prompts, finish) => {
            if (prompts.some((p) => !p.echo)) pw.sent = true;
            finish(prompts.map((p) => (p.echo ? '' : answer)));
          },
        };
      },
      again,
    });
  }
  if (st.password && hop.passwordAuthentication) {
    out.push({
      method: 'password',
      run: async () => {
        const answer = await askPassword();
        if (answer === undefined) return undefined;
        pw.sent = true;
        return { type: 'password', username: user, password: answer };
      },
      again,
    });
  }
  return out;
}

/** An ssh2 authHandler that walks the steps above and fills `tried`/`serverMethods` as it goes. */
export function authHandlerFor(hop: ResolvedHost, st: AuthState): AuthHandlerMiddleware {
  const queue = steps(hop, st);
  let first = true;
  let last: PlannedStep | undefined;
  return (methodsLeft, partial, next) => {
    if (first) {
      first = false;
      // `none` first, as OpenSSH does: the refusal tells us which methods the server takes.
      next({ type: 'none', username: hop.user });
      return;
    }
    if (methodsLeft) st.serverMethods.splice(0, st.serverMethods.length, ...methodsLeft);
    // Called again without partial success: the server refused the last step.
    if (last && !partial && last.again?.()) queue.unshift(last);
    last = undefined;
    const allowed = (m: AuthenticationType) => !methodsLeft || methodsLeft.includes(m === 'agent' ? 'publickey' : m);
    void (async () => {
      while (queue.length) {
        const step = queue.shift()!;
        if (!allowed(step.method)) continue;
        st.localWork?.begin();
        let auth: AnyAuthMethod | undefined;
        try {
          auth = await step.run();
        } finally {
          st.localWork?.end();
        }
        if (!auth) continue;
        st.tried.push({ method: step.method, ...(step.detail ? { detail: step.detail } : {}) });
        last = step;
        next(auth);
        return;
      }
      next(false as unknown as AnyAuthMethod);
    })().catch(() => next(false as unknown as AnyAuthMethod));
  };
}
