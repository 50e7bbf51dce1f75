// The CLI's SSH flags (`--host [USER@]HOST[:PORT]`, `--identity FILE`, `--known-hosts FILE`, `--accept-new`)
// mapped onto connection options. Without `--accept-new` an unknown host is refused (unless the user's own
// ssh config says StrictHostKeyChecking accept-new/no, as `ssh` would honour it).
// Tests: test/unit/core/ssh/destination.test.ts
import type { SshConnectOptions } from './connect';
import { parseDestination } from './destination';

export interface SshCliFlags {
  host: string;
  identity?: string[];
  knownHosts?: string;
  acceptNew?: boolean;
  /** Prompts the CLI can offer on a terminal; absent in non-interactive use. */
  passphrase?: SshConnectOptions['passphrase'];
  password?: SshConnectOptions['password'];
  log?: (msg: string) => void;
}

export function sshOptionsFromCli(flags: SshCliFlags): SshConnectOptions {
  return {
    // Checked here so a bad --host fails before any network activity; kept as written, it labels the hits.
    destination: (parseDestination(flags.host), flags.host),
    ...(flags.identity?.length ? { identityFiles: flags.identity } : {}),
    ...(flags.knownHosts ? { knownHostsFile: flags.knownHosts } : {}),
    onUnknownHost: flags.acceptNew ? () => 'accept-and-record' : () => 'reject',
    passphrase: flags.passphrase,
    password: flags.password,
    log: flags.log,
  };
}
