// ~/.ssh/config resolution with OpenSSH's semantics (ssh_config(5)), on top of the `ssh-config` parser:
// the first obtained value of a keyword wins (IdentityFile accumulates), Host patterns are matched against
// the name given on the command line, `Include` is expanded in place (relative to ~/.ssh, globs allowed,
// conditional when inside a Host/Match block), and `Match` supports host/originalhost/user/localuser/all.
// `Match exec` is NEVER run: a config file must not be able to make ProbeLens execute commands; such a
// block counts as not matching and the caller is told.
import type * as SshConfigModule from 'ssh-config' with { 'resolution-mode': 'import' };
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir, hostname as localHostName, userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { globMatch, matchPatternList } from './knownHosts';
import { parseProxyJump, type Destination } from './destination';
import { SshConfigError } from './errors';

export type StrictHostKeyChecking = 'yes' | 'no' | 'accept-new' | 'ask';

export interface ResolvedHost {
  /** The name as given (`--host` or ProxyJump element), used for Host matching and `%n`. */
  alias: string;
  /** Real host to connect to (HostName applied). */
  hostName: string;
  port: number;
  user: string;
  /** Expanded paths, command line first, then config, then (if none) OpenSSH's defaults. */
  identityFiles: string[];
  /** True when IdentityFile came from the command line or config (OpenSSH then skips the defaults). */
  identityFilesExplicit: boolean;
  identitiesOnly: boolean;
  /** Expanded agent socket from IdentityAgent, `none` → null, absent → undefined (use SSH_AUTH_SOCK). */
  identityAgent: string | null | undefined;
  userKnownHostsFiles: string[];
  /** Read-only system files (GlobalKnownHostsFile), consulted after the user's. */
  globalKnownHostsFiles: string[];
  /** HostKeyAlias: the name looked up in known_hosts instead of the host (no `[…]:port` form). */
  hostKeyAlias: string | undefined;
  strictHostKeyChecking: StrictHostKeyChecking;
  hashKnownHosts: boolean;
  /** Jump hosts in order (first is contacted first); [] when none. */
  proxyJump: Destination[];
  /** Seconds; 0 = off. */
  serverAliveInterval: number;
  serverAliveCountMax: number;
  /** Seconds; undefined = system default. */
  connectTimeout: number | undefined;
  passwordAuthentication: boolean;
  kbdInteractiveAuthentication: boolean;
  /** Notes for the user (ignored `Match exec`, unreadable includes, unsupported ProxyCommand…). */
  notes: string[];
}

export interface ResolveOptions {
  /**
   * Config file to read. Default: ~/.ssh/config then /etc/ssh/ssh_config, as `ssh` does; a given file is
   * read alone (like `ssh -F`); `null` reads none.
   */
  configFile?: string | null;
  /** The system-wide file read after the user's default one; default /etc/ssh/ssh_config. */
  systemConfigFile?: string;
  /** From the command line; these win over the config, as for `ssh -l/-p/-i`. */
  user?: string;
  port?: number;
  identityFiles?: string[];
  home?: string;
  localUser?: string;
}

/** Keywords whose every occurrence adds a value instead of the first one winning. */
const ACCUMULATE = new Set(['identityfile', 'certificatefile', 'localforward', 'remoteforward', 'dynamicforward', 'sendenv', 'setenv']);

const MAX_INCLUDE_DEPTH = 16;

// ssh-config ships ESM types but a CommonJS build too; this project compiles to CommonJS, so load that build.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sshConfig = require('ssh-config') as typeof SshConfigModule;
type Line = SshConfigModule.Line;

interface Ctx {
  alias: string;
  home: string;
  localUser: string;
  cliUser?: string;
  values: Map<string, string[]>;
  notes: string[];
  depth: number;
  /** OpenSSH parses twice when a `Match final` exists; such blocks only match in the second pass. */
  finalPass: boolean;
  sawFinal: boolean;
}

function valueText(v: Line & { value?: unknown }): string[] {
  const val = (v as { value: string | { val: string }[] }).value;
  if (typeof val === 'string') return [val];
  return val.map((x) => x.val);
}

function tilde(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return join(home, p.slice(2));
  return p;
}

function setValue(ctx: Ctx, key: string, args: string[]): void {
  const k = key.toLowerCase();
  if (ACCUMULATE.has(k)) {
    const list = ctx.values.get(k) ?? [];
    // Duplicates are dropped, as OpenSSH does for identity files (and a second pass would repeat them).
    if (!list.includes(args.join(' '))) list.push(args.join(' '));
    ctx.values.set(k, list);
  } else if (!ctx.values.has(k)) {
    ctx.values.set(k, args);
  }
}

function first(ctx: Ctx, key: string): string | undefined {
  return ctx.values.get(key)?.[0];
}

/** The host name as known at this point of parsing: HostName (with %h) if set already, else the alias. */
function currentHostName(ctx: Ctx): string {
  const hn = first(ctx, 'hostname');
  return hn ? hn.replace(/%(%|h)/g, (_m, c: string) => (c === '%' ? '%' : ctx.alias)) : ctx.alias;
}

function matchCriteria(tokens: string[], ctx: Ctx): boolean {
  let i = 0;
  let result = true;
  while (i < tokens.length) {
    let word = tokens[i++].toLowerCase();
    const negate = word.startsWith('!');
    if (negate) word = word.slice(1);
    let ok: boolean;
    switch (word) {
      case 'all':
        ok = true;
        break;
      case 'canonical':
        // No hostname canonicalisation happens here, so a canonical-only block never applies.
        ok = false;
        break;
      case 'final':
        ctx.sawFinal = true;
        ok = ctx.finalPass;
        break;
      case 'exec': {
        const cmd = tokens[i++] ?? '';
        ctx.notes.push(
          `ssh config: "Match exec ${cmd}" was not run (ProbeLens never executes commands from ssh config); that block is treated as not matching`,
        );
        // Not matching — also when negated: an unrun test must not switch a block on.
        return false;
      }
      case 'host':
        ok = matchPatternList(currentHostName(ctx), tokens[i++] ?? '');
        break;
      case 'originalhost':
        ok = matchPatternList(ctx.alias, tokens[i++] ?? '');
        break;
      case 'user':
        ok = matchPatternList(first(ctx, 'user') ?? ctx.cliUser ?? ctx.localUser, tokens[i++] ?? '');
        break;
      case 'localuser':
        ok = matchPatternList(ctx.localUser, tokens[i++] ?? '');
        break;
      default:
        ctx.notes.push(`ssh config: Match criterion "${word}" is not supported; that block is treated as not matching`);
        return false;
    }
    if (negate) ok = !ok;
    if (!ok) result = false;
  }
  return result;
}

/** Expand `~` and globs (in any path component, `*` and `?` as OpenSSH's glob(3) use); sorted like glob(3). */
function expandInclude(pattern: string, ctx: Ctx, baseDir: string): string[] {
  const p = tilde(pattern, ctx.home);
  const full = isAbsolute(p) ? p : join(baseDir, p);
  let paths = ['/'];
  for (const part of full.split('/').filter(Boolean)) {
    if (!/[*?]/.test(part)) {
      paths = paths.map((d) => join(d, part));
      continue;
    }
    const next: string[] = [];
    for (const d of paths) {
      let names: string[];
      try {
        names = readdirSync(d);
      } catch {
        continue;
      }
      for (const n of names.sort()) {
        if (n.startsWith('.') && !part.startsWith('.')) continue;
        if (globMatch(part, n)) next.push(join(d, n));
      }
    }
    paths = next;
  }
  return paths;
}

function evaluate(lines: readonly Line[], active: boolean, ctx: Ctx, baseDir: string): void {
  for (const line of lines) {
    if (line.type !== sshConfig.LineType.DIRECTIVE) continue;
    const param = line.param.toLowerCase();
    if ('config' in line && (param === 'host' || param === 'match')) {
      let matches: boolean;
      const args = valueText(line);
      if (param === 'host') matches = hostLineMatches(args, ctx.alias);
      else matches = active && matchCriteria(args, ctx);
      evaluate(line.config, active && matches, ctx, baseDir);
      continue;
    }
    if (param === 'include') {
      if (ctx.depth >= MAX_INCLUDE_DEPTH)
        throw new SshConfigError(`ssh config: Include nested more than ${MAX_INCLUDE_DEPTH} deep (a loop?); fix the Include lines`);
      for (const pat of valueText(line)) {
        for (const file of expandInclude(pat, ctx, baseDir)) {
          let text: string;
          try {
            if (!statSync(file).isFile()) continue;
            text = readFileSync(file, 'utf8');
          } catch (e) {
            ctx.notes.push(`ssh config: Include ${file} could not be read (${(e as Error).message})`);
            continue;
          }
          ctx.depth++;
          evaluate(parseConfigText(text, file), active, ctx, baseDir);
          ctx.depth--;
        }
      }
      continue;
    }
    if (active) setValue(ctx, param, valueText(line));
  }
}

/** A `Host` line: each word is one pattern (commas are not separators here); a matching negation vetoes. */
function hostLineMatches(patterns: string[], alias: string): boolean {
  let matched = false;
  const name = alias.toLowerCase();
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    if (globMatch((negated ? raw.slice(1) : raw).toLowerCase(), name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function parseConfigText(text: string, file: string): Line[] {
  try {
    return sshConfig.parse(text);
  } catch (e) {
    throw new SshConfigError(`ssh config ${file}: ${(e as Error).message}; fix that line or pass another config file`);
  }
}

export interface TokenValues {
  alias: string;
  hostName: string;
  port: number;
  remoteUser: string;
  localUser: string;
  home: string;
}

/** ssh_config(5) TOKENS used in IdentityFile / UserKnownHostsFile / IdentityAgent, then `~` expansion. */
export function expandTokens(text: string, t: TokenValues): string {
  // `${VAR}` environment references are allowed in the same keywords (ssh_config(5) ENVIRONMENT VARIABLES).
  const withEnv = text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = process.env[name];
    if (v === undefined) throw new SshConfigError(`ssh config: environment variable ${name} in "${text}" is not set`);
    return v;
  });
  const out = withEnv.replace(/%(.)/g, (m, c: string) => {
    switch (c) {
      case '%':
        return '%';
      case 'h':
        return t.hostName;
      case 'n':
        return t.alias;
      case 'p':
        return String(t.port);
      case 'r':
        return t.remoteUser;
      case 'u':
        return t.localUser;
      case 'd':
        return t.home;
      case 'i':
        return String(process.getuid?.() ?? 0);
      case 'l':
        return localHostName().split('.')[0];
      case 'L':
        return localHostName();
      default:
        throw new SshConfigError(`ssh config: unknown token ${m} in "${text}"; see TOKENS in ssh_config(5)`);
    }
  });
  return tilde(out, t.home);
}

function yesNo(v: string | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  return /^(yes|true)$/i.test(v);
}

function num(v: string | undefined, key: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw new SshConfigError(`ssh config: ${key} "${v}" is not a number`);
  return Number(v);
}

/** Resolve everything ProbeLens needs about `alias` from the command line and the ssh config. */
export function resolveHost(alias: string, opts: ResolveOptions = {}): ResolvedHost {
  const home = opts.home ?? homedir();
  const localUser = opts.localUser ?? userInfo().username;
  const ctx: Ctx = {
    alias,
    home,
    localUser,
    cliUser: opts.user,
    values: new Map(),
    notes: [],
    depth: 0,
    finalPass: false,
    sawFinal: false,
  };
  // Command-line values are "obtained first", so the config cannot override them (as with ssh -l/-p).
  if (opts.user !== undefined) ctx.values.set('user', [opts.user]);
  if (opts.port !== undefined) ctx.values.set('port', [String(opts.port)]);
  // Relative Include paths are relative to ~/.ssh in user files and to /etc/ssh in the system file.
  const files: { path: string; includeBase: string; mustExist: boolean }[] =
    opts.configFile === undefined
      ? [
          { path: join(home, '.ssh', 'config'), includeBase: join(home, '.ssh'), mustExist: false },
          { path: opts.systemConfigFile ?? '/etc/ssh/ssh_config', includeBase: '/etc/ssh', mustExist: false },
        ]
      : opts.configFile === null
        ? []
        : [{ path: opts.configFile, includeBase: join(home, '.ssh'), mustExist: true }];
  const parsed: { lines: Line[]; includeBase: string }[] = [];
  for (const f of files) {
    let text: string | undefined;
    try {
      text = readFileSync(f.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || f.mustExist)
        throw new SshConfigError(`ssh config ${f.path} cannot be read: ${(e as Error).message}; fix its permissions or pass another file`);
    }
    if (text !== undefined) parsed.push({ lines: parseConfigText(text, f.path), includeBase: f.includeBase });
  }
  for (const p of parsed) evaluate(p.lines, true, ctx, p.includeBase);
  if (ctx.sawFinal) {
    // Values from the first pass stay (first obtained wins); the second pass only fills in what is unset.
    ctx.finalPass = true;
    for (const p of parsed) evaluate(p.lines, true, ctx, p.includeBase);
  }

  const hostName = currentHostName(ctx);
  const port = num(first(ctx, 'port'), 'Port') ?? 22;
  const user = first(ctx, 'user') ?? localUser;
  const tokens: TokenValues = { alias, hostName, port, remoteUser: user, localUser, home };

  const configIds = (ctx.values.get('identityfile') ?? []).filter((f) => f.toLowerCase() !== 'none');
  const cliIds = opts.identityFiles ?? [];
  const explicit = cliIds.length + configIds.length > 0;
  const identityFiles = explicit
    ? [...cliIds.map((f) => tilde(f, home)), ...configIds.map((f) => expandTokens(f, tokens))]
    : ['id_rsa', 'id_ecdsa', 'id_ecdsa_sk', 'id_ed25519', 'id_ed25519_sk'].map((n) => join(home, '.ssh', n));

  const agentRaw = first(ctx, 'identityagent');
  let identityAgent: string | null | undefined;
  if (agentRaw === undefined || agentRaw === 'SSH_AUTH_SOCK') identityAgent = undefined;
  else if (agentRaw.toLowerCase() === 'none') identityAgent = null;
  else identityAgent = expandTokens(agentRaw.startsWith('$') ? (process.env[agentRaw.slice(1)] ?? '') : agentRaw, tokens);

  const khRaw = ctx.values.get('userknownhostsfile');
  const userKnownHostsFiles = khRaw
    ? khRaw.filter((f) => f.toLowerCase() !== 'none').map((f) => expandTokens(f, tokens))
    : [join(home, '.ssh', 'known_hosts'), join(home, '.ssh', 'known_hosts2')];

  const gkh = ctx.values.get('globalknownhostsfile');
  const globalKnownHostsFiles = gkh
    ? gkh.filter((f) => f.toLowerCase() !== 'none').map((f) => expandTokens(f, tokens))
    : ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2'];
  const alias_ = first(ctx, 'hostkeyalias');

  const shk = (first(ctx, 'stricthostkeychecking') ?? 'ask').toLowerCase();
  const strictHostKeyChecking: StrictHostKeyChecking =
    shk === 'yes' || shk === 'true'
      ? 'yes'
      : shk === 'no' || shk === 'off' || shk === 'false'
        ? 'no'
        : shk === 'accept-new'
          ? 'accept-new'
          : 'ask';

  const pj = ctx.values.get('proxyjump');
  let proxyJump: Destination[] = [];
  if (pj) {
    try {
      proxyJump = parseProxyJump(pj.join(' '));
    } catch (e) {
      throw new SshConfigError(`ssh config: ProxyJump for ${alias}: ${(e as Error).message}`);
    }
  }
  const proxyCommand = first(ctx, 'proxycommand');
  if (proxyCommand !== undefined && proxyCommand.toLowerCase() !== 'none' && !pj) {
    // Connecting directly instead would quietly take another network path than `ssh` does.
    throw new SshConfigError(
      `ssh config: ${alias} is reached through ProxyCommand, which ProbeLens does not run (it executes no commands from ssh config); express the route as ProxyJump, or add "ProxyCommand none" for this host`,
    );
  }

  return {
    alias,
    hostName,
    port,
    user,
    identityFiles,
    identityFilesExplicit: explicit,
    identitiesOnly: yesNo(first(ctx, 'identitiesonly'), false),
    identityAgent,
    userKnownHostsFiles,
    globalKnownHostsFiles,
    hostKeyAlias: alias_ === undefined || alias_.toLowerCase() === 'none' ? undefined : alias_,
    strictHostKeyChecking,
    hashKnownHosts: yesNo(first(ctx, 'hashknownhosts'), false),
    proxyJump,
    serverAliveInterval: num(first(ctx, 'serveraliveinterval'), 'ServerAliveInterval') ?? 0,
    serverAliveCountMax: num(first(ctx, 'serveralivecountmax'), 'ServerAliveCountMax') ?? 3,
    connectTimeout: num(first(ctx, 'connecttimeout'), 'ConnectTimeout'),
    passwordAuthentication: yesNo(first(ctx, 'passwordauthentication'), true),
    kbdInteractiveAuthentication: yesNo(first(ctx, 'kbdinteractiveauthentication') ?? first(ctx, 'challengeresponseauthentication'), true),
    notes: [...new Set(ctx.notes)],
  };
}
