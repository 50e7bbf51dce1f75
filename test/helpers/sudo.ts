// A non-root user with passwordless sudo, so the engine's `sudo -n` path runs for real. Creating a system user is
// intrusive, so it happens only in CI or when asked (PROBELENS_TEST_CREATE_USER=1); an existing, fully set up user
// is reused either way.
import type { TestContext } from 'node:test';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { IN_CI, missing } from './require';
import type { Sshd } from './sshd';

export const SUDO_USER = 'probelens-sudo';
export const SUDOERS_FILE = '/etc/sudoers.d/probelens-test';
const SUDOERS = `# Written by ProbeLens's integration tests (test/helpers/sudo.ts) for its sudo -n path.\n${SUDO_USER} ALL=(ALL:ALL) NOPASSWD: ALL\n`;

export class SudoUserUnavailable extends Error {
  constructor(reason: string) {
    super(`no passwordless-sudo test user: ${reason}`);
    this.name = 'SudoUserUnavailable';
  }
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error) throw new SudoUserUnavailable(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new SudoUserUnavailable(`${cmd} ${args.join(' ')} failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

function userExists(name: string): boolean {
  return spawnSync('id', ['-u', name], { stdio: 'ignore' }).status === 0;
}

function sudoersInstalled(): boolean {
  return existsSync(SUDOERS_FILE) && readFileSync(SUDOERS_FILE, 'utf8') === SUDOERS;
}

// Without PAM, sshd refuses accounts whose password field is locked ('!'), which is how useradd leaves them;
// '*' means "no password can match" without marking the account locked.
function passwordLocked(name: string): boolean {
  const line = readFileSync('/etc/shadow', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  return !line || line.split(':')[1].startsWith('!');
}

/**
 * Ensures the user exists with passwordless sudo and returns its name. Idempotent. Throws SudoUserUnavailable when
 * it may not or cannot (not root, no sudo, creation not allowed here).
 */
export function ensureSudoUser(): string {
  // Checking the shadow and sudoers files needs root as much as creating them does.
  if (process.getuid?.() !== 0) throw new SudoUserUnavailable('setting up or checking the test user needs root');
  const ready = userExists(SUDO_USER) && sudoersInstalled() && !passwordLocked(SUDO_USER);
  if (ready) return SUDO_USER;
  if (!(IN_CI || process.env.PROBELENS_TEST_CREATE_USER === '1')) {
    throw new SudoUserUnavailable(`user ${SUDO_USER} is not set up; set PROBELENS_TEST_CREATE_USER=1 to let the tests create it`);
  }
  if (!existsSync('/usr/bin/sudo')) throw new SudoUserUnavailable('sudo is not installed (apt-get install sudo)');
  if (!userExists(SUDO_USER)) {
    run('useradd', ['--create-home', '--shell', '/bin/sh', '--comment', 'ProbeLens test user', SUDO_USER]);
  }
  if (passwordLocked(SUDO_USER)) run('usermod', ['--password', '*', SUDO_USER]);
  if (!sudoersInstalled()) {
    // A broken file in sudoers.d disables sudo for everyone: validate a staging copy before moving it in place.
    const staging = `${SUDOERS_FILE}.tmp${process.pid}`;
    writeFileSync(staging, SUDOERS, { mode: 0o440 });
    chmodSync(staging, 0o440);
    try {
      run('visudo', ['-cf', staging]);
      renameSync(staging, SUDOERS_FILE);
    } finally {
      rmSync(staging, { force: true });
    }
  }
  // Prove it before handing it out, so a test failure later is about the code under test, not this setup.
  run('runuser', ['-u', SUDO_USER, '--', 'sudo', '-n', 'true']);
  return SUDO_USER;
}

/**
 * The sudo user for a test, with `sshd`'s client key authorized for it when given; `undefined` after missing()
 * (skip; under CI=true, fail). Use it as `const user = sudoUser(t, sshd); if (!user) return;`.
 */
export function sudoUser(t: TestContext, sshd?: Sshd): string | undefined {
  let user: string;
  try {
    user = ensureSudoUser();
  } catch (e) {
    if (!(e instanceof SudoUserUnavailable)) throw e;
    missing(t, e.message);
    return undefined;
  }
  sshd?.authorize(user);
  return user;
}

/** Runs `argv` as the sudo user (locally, no ssh), for the local target's `sudo -n` path. */
export function runAsSudoUser(argv: string[]): string {
  return execFileSync('runuser', ['-u', SUDO_USER, '--', ...argv], { encoding: 'utf8' });
}
