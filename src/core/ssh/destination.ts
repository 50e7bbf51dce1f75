// `[USER@]HOST[:PORT]` as given to `--host` and in ProxyJump lists. Parsed strictly: these strings name
// machines and may end up in messages and known_hosts lines, so anything outside the expected alphabet is
// refused here instead of being carried along.
import { isIP, isIPv6 } from 'node:net';

export interface Destination {
  user?: string;
  /** Host name, alias or address; IPv6 without brackets. */
  host: string;
  port?: number;
}

export class DestinationError extends Error {
  constructor(
    readonly input: string,
    why: string,
  ) {
    super(`invalid host "${printable(input)}": ${why}; expected [USER@]HOST[:PORT], e.g. alice@db1:2222 or [::1]:22`);
    this.name = 'DestinationError';
  }
}

function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?').slice(0, 80);
}

// POSIX portable user names plus the trailing `$` some systems use for machine accounts.
const USER_RE = /^[A-Za-z0-9._][A-Za-z0-9._-]*\$?$/;
// DNS labels, plus `_` which ssh_config aliases commonly contain.
const HOST_RE = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

export function isValidUser(user: string): boolean {
  return user.length <= 64 && USER_RE.test(user);
}

export function isValidHost(host: string): boolean {
  return (host.length <= 253 && HOST_RE.test(host)) || isIP(host) !== 0;
}

export function parsePort(text: string, input: string): number {
  if (!/^[0-9]{1,5}$/.test(text)) throw new DestinationError(input, `port "${printable(text)}" is not a number`);
  const port = Number(text);
  if (port < 1 || port > 65535) throw new DestinationError(input, `port ${port} is outside 1-65535`);
  return port;
}

/** Parse `[USER@]HOST[:PORT]`; IPv6 addresses in brackets (`[::1]:2222`), or bare when no port follows. */
export function parseDestination(input: string): Destination {
  if (input.length === 0 || input.length > 400) throw new DestinationError(input, 'empty or too long');
  let rest = input;
  let user: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    user = rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (!isValidUser(user)) throw new DestinationError(input, `user "${printable(user)}" has characters a user name cannot have`);
  }
  let host: string;
  let port: number | undefined;
  if (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 0) throw new DestinationError(input, 'missing "]" after an IPv6 address');
    host = rest.slice(1, close);
    const after = rest.slice(close + 1);
    if (!isIPv6(host)) throw new DestinationError(input, `"${printable(host)}" in brackets is not an IPv6 address`);
    if (after !== '') {
      if (!after.startsWith(':')) throw new DestinationError(input, 'only ":PORT" may follow "]"');
      port = parsePort(after.slice(1), input);
    }
  } else if (isIPv6(rest)) {
    host = rest;
  } else {
    const colon = rest.indexOf(':');
    if (colon >= 0) {
      port = parsePort(rest.slice(colon + 1), input);
      rest = rest.slice(0, colon);
    }
    host = rest;
    if (!isValidHost(host)) throw new DestinationError(input, `"${printable(host)}" is not a host name or address`);
  }
  return { ...(user !== undefined ? { user } : {}), host, ...(port !== undefined ? { port } : {}) };
}

/** Inverse of `parseDestination`, for messages and ProxyJump specs. */
export function formatDestination(d: Destination): string {
  const user = d.user ? `${d.user}@` : '';
  if (d.port === undefined) return user + d.host;
  return `${user}${d.host.includes(':') ? `[${d.host}]` : d.host}:${d.port}`;
}

/**
 * A ProxyJump value: `none`, or a comma-separated list of `[USER@]HOST[:PORT]` / `ssh://[USER@]HOST[:PORT]`.
 * Returns [] for `none`.
 */
export function parseProxyJump(value: string): Destination[] {
  const v = value.trim();
  if (v.toLowerCase() === 'none') return [];
  return v.split(',').map((part) => {
    const p = part.trim();
    return parseDestination(p.startsWith('ssh://') ? p.slice('ssh://'.length).replace(/\/$/, '') : p);
  });
}
