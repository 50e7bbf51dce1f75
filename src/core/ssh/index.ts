// What the rest of ProbeLens uses from the SSH layer. The Target itself is src/core/target/ssh.ts.
export { connectSsh, resolveChain, type SshConnectOptions, type SshConnection } from './connect';
export { sshOptionsFromCli, type SshCliFlags } from './cliOptions';
export { parseDestination, formatDestination, parseProxyJump, DestinationError, type Destination } from './destination';
export { resolveHost, type ResolvedHost, type ResolveOptions, type StrictHostKeyChecking } from './config';
export type { UnknownHostCallback, UnknownHostDecision, UnknownHostInfo } from './hostKeyPolicy';
export type { AuthCallbacks } from './auth';
export {
  SshError,
  SshConnectError,
  SshAuthError,
  SshConfigError,
  HostKeyError,
  HostKeyUnknownError,
  HostKeyChangedError,
  HostKeyRevokedError,
  type SshConnectFailure,
} from './errors';
export { fingerprintSha256 } from './knownHosts';
