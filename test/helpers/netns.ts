// A network namespace joined to this host by one veth pair, so a test can put a target (sshd) behind a link and
// then cut that link: the client's TCP connection goes silent without a FIN or RST, as when a network path dies.
// Addresses: a private /30 from 192.168.250.0/24 on the veth pair only; both ends are this project's own test
// hosts (nothing else is ever routed there).
import type { TestContext } from 'node:test';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmdirSync, statSync } from 'node:fs';
import { missing } from './require';
import { atProcessEnd, startSshd, SshdUnavailable, type Sshd, type SshdOptions } from './sshd';

export interface NetNs {
  /** Namespace name (`ip netns exec NAME …`, `/run/netns/NAME`). */
  name: string;
  /** This side's address on the veth (`192.168.250.X`). */
  hostAddress: string;
  /** The namespace side's address: bind servers here, connect to it from the test. */
  nsAddress: string;
  /** Takes the host side of the link down: packets stop both ways, no RST is ever sent. */
  cut(): void;
  /** Brings the link back up after cut(). */
  restore(): void;
  /** Deletes the namespace (its veth end and the pair with it). Idempotent. */
  destroy(): void;
}

export class NetnsUnavailable extends Error {
  constructor(reason: string) {
    super(`cannot create a network namespace: ${reason}`);
    this.name = 'NetnsUnavailable';
  }
}

const SUBNET = '192.168.250.';
const LOCK = '/run/probelens-netns.lock';
let counter = 0;
const created = new Set<string>();
let hookInstalled = false;

function ip(...args: string[]): string {
  try {
    return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const stderr = String((e as { stderr?: string }).stderr ?? '').trim();
    throw new Error(`ip ${args.join(' ')} failed: ${stderr || (e as Error).message}`);
  }
}

function deleteNs(name: string): void {
  try {
    execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  } catch {
    /* already gone */
  }
  created.delete(name);
}

// Test processes of other suites may create namespaces at the same time: pick the /30 under a lock so two never
// share one. mkdir is the atomic step; a lock older than 30 s belongs to a process that died holding it.
function withLock<T>(fn: () => T): T {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > 30_000) rmdirSync(LOCK);
      } catch {
        /* raced with its owner */
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${LOCK}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  try {
    return fn();
  } finally {
    rmdirSync(LOCK);
  }
}

function usedSubnets(): Set<number> {
  const used = new Set<number>();
  // Host-side addresses are visible here; namespace sides pair with them, so this is the complete picture.
  for (const m of ip('-4', '-o', 'addr', 'show').matchAll(/inet 192\.168\.250\.(\d+)\//g)) used.add(Number(m[1]) >> 2);
  return used;
}

/** Creates a namespace with a veth link to this host. Throws NetnsUnavailable when the machine cannot. */
export function createNetns(): NetNs {
  if (process.getuid?.() !== 0) throw new NetnsUnavailable('creating namespaces needs root');
  if (!existsSync('/usr/sbin/ip') && !existsSync('/sbin/ip') && !existsSync('/bin/ip')) {
    throw new NetnsUnavailable('iproute2 (`ip`) is not installed');
  }
  const tag = `${process.pid}${counter++}`.slice(-9);
  const name = `probelens_${tag}`;
  // Interface names are limited to 15 characters.
  const hostIf = `plh${tag}`;
  const nsIf = `pln${tag}`;
  let hostAddress = '';
  let nsAddress = '';
  try {
    ip('netns', 'add', name);
  } catch (e) {
    throw new NetnsUnavailable((e as Error).message);
  }
  created.add(name);
  if (!hookInstalled) {
    hookInstalled = true;
    atProcessEnd(() => [...created].forEach(deleteNs));
  }
  try {
    withLock(() => {
      const used = usedSubnets();
      let block = -1;
      // Block 0 holds the network address .0; any /30 from 1..63 is fine.
      for (let b = 1; b < 64; b++)
        if (!used.has(b)) {
          block = b;
          break;
        }
      if (block < 0) throw new Error(`no free /30 left in ${SUBNET}0/24 (stale probelens_* namespaces? ip netns list)`);
      hostAddress = `${SUBNET}${block * 4 + 1}`;
      nsAddress = `${SUBNET}${block * 4 + 2}`;
      ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
      ip('link', 'set', nsIf, 'netns', name);
      ip('addr', 'add', `${hostAddress}/30`, 'dev', hostIf);
    });
    ip('link', 'set', hostIf, 'up');
    ip('-n', name, 'addr', 'add', `${nsAddress}/30`, 'dev', nsIf);
    ip('-n', name, 'link', 'set', nsIf, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
  } catch (e) {
    deleteNs(name);
    try {
      execFileSync('ip', ['link', 'del', hostIf], { stdio: 'ignore' });
    } catch {
      /* went with the namespace */
    }
    throw e;
  }
  return {
    name,
    hostAddress,
    nsAddress,
    cut: () => void ip('link', 'set', hostIf, 'down'),
    restore: () => void ip('link', 'set', hostIf, 'up'),
    // Deleting the namespace destroys its veth end, which takes the peer on this side with it.
    destroy: () => deleteNs(name),
  };
}

/** True while a namespace made by createNetns() still exists. */
export function netnsExists(name: string): boolean {
  return existsSync(`/run/netns/${name}`);
}

/**
 * An sshd reachable only through a fresh namespace's veth link (listening on `netns.nsAddress`); both are torn down
 * after the test. Returns undefined after missing() when namespaces or sshd are unavailable:
 *
 *   const r = await requireSshdInNetns(t); if (!r) return;
 *   ... r.netns.cut() ...
 */
export async function requireSshdInNetns(
  t: TestContext,
  opts: Omit<SshdOptions, 't' | 'netns' | 'listenAddress'> = {},
): Promise<{ sshd: Sshd; netns: NetNs } | undefined> {
  let netns: NetNs;
  try {
    netns = createNetns();
  } catch (e) {
    if (!(e instanceof NetnsUnavailable)) throw e;
    missing(t, e.message);
    return undefined;
  }
  let sshd: Sshd | undefined;
  // One hook, so the order is certain: sshd (living inside the namespace) goes first, then the namespace.
  t.after(async () => {
    await sshd?.stop();
    netns.destroy();
  });
  try {
    sshd = await startSshd({ ...opts, netns: netns.name, listenAddress: netns.nsAddress });
    return { sshd, netns };
  } catch (e) {
    if (!(e instanceof SshdUnavailable)) throw e;
    missing(t, e.message);
    return undefined;
  }
}
