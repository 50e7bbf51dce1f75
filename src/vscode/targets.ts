// Where probes run: this machine (always there) and SSH hosts the user added. Several can be active at once;
// each active target gets its own TraceSession per binary. SSH connections are opened when tracing starts
// and belong to the tracing run's scope; secrets stay in SecretStorage only when the user says so.
// Tests: test/e2e/sshTarget.test.ts
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { parseDestination } from '../core/ssh/destination';
import { rememberedSecret } from '../core/ssh/rememberedSecret';
import type { UnknownHostInfo } from '../core/ssh/hostKeyPolicy';
import { LocalTarget } from '../core/target/local';
import { SshTarget } from '../core/target/ssh';
import type { Target } from '../core/target/target';
import { TracefsAgent } from '../core/tracefs/agentClient';
import type { Ctx } from './ctx';
import { sshConfigHosts } from './model/sshHosts';

export interface TargetEntry {
  id: string;
  kind: 'local' | 'ssh';
  /** `local`, or the destination as the user gave it (`db1`, `alice@10.0.0.5:2222`) */
  label: string;
  sudo?: boolean;
  /** the folder on the host that mirrors the workspace folder (binary path mapping); empty = same paths */
  remotePrefix?: string;
}

const TARGETS_KEY = 'probelens.targets';
const ACTIVE_KEY = 'probelens.activeTargets';
export const LOCAL_ID = 'local';

export class Targets implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly ctx: Ctx) {}

  all(): TargetEntry[] {
    const ssh = this.ctx.extension.globalState.get<TargetEntry[]>(TARGETS_KEY, []);
    return [{ id: LOCAL_ID, kind: 'local', label: 'local', sudo: this.ctx.config.localSudo }, ...ssh];
  }

  get(id: string): TargetEntry | undefined {
    return this.all().find((t) => t.id === id);
  }

  /** Targets tracing runs on; the local machine unless the user chose otherwise. */
  active(): TargetEntry[] {
    const ids = this.ctx.extension.workspaceState.get<string[]>(ACTIVE_KEY, [LOCAL_ID]);
    const act = this.all().filter((t) => ids.includes(t.id));
    return act.length ? act : [this.all()[0]];
  }

  async setActive(ids: string[]): Promise<void> {
    await this.ctx.extension.workspaceState.update(ACTIVE_KEY, ids);
    this.changed.fire();
  }

  async remove(id: string): Promise<void> {
    if (id === LOCAL_ID) return;
    const ssh = this.ctx.extension.globalState.get<TargetEntry[]>(TARGETS_KEY, []).filter((t) => t.id !== id);
    await this.ctx.extension.globalState.update(TARGETS_KEY, ssh);
    await this.setActive(
      this.active()
        .map((t) => t.id)
        .filter((x) => x !== id),
    );
  }

  /** "ProbeLens: Add SSH Target…": a host from ~/.ssh/config or `user@host[:port]`, then how to run there. */
  async addSsh(): Promise<TargetEntry | undefined> {
    let hosts: string[] = [];
    try {
      hosts = sshConfigHosts(readFileSync(this.ctx.config.sshConfigFile ?? join(homedir(), '.ssh', 'config'), 'utf8'));
    } catch {
      // no ssh config: the user types a destination
    }
    const typed = '$(edit) Enter user@host[:port]…';
    const pick = hosts.length
      ? await vscode.window.showQuickPick(
          [...hosts.map((h) => ({ label: h, description: `from ${this.ctx.config.sshConfigFile ?? '~/.ssh/config'}` })), { label: typed }],
          { title: 'ProbeLens: add SSH target' },
        )
      : { label: typed };
    if (!pick) return undefined;
    let dest = pick.label;
    if (pick.label === typed) {
      const v = await vscode.window.showInputBox({
        title: 'ProbeLens: add SSH target',
        prompt: 'Destination as for ssh: [user@]host[:port]',
        placeHolder: 'alice@db1.example.com:22',
        validateInput: (s) => {
          try {
            parseDestination(s.trim());
            return undefined;
          } catch (e) {
            return (e as Error).message;
          }
        },
      });
      if (!v) return undefined;
      dest = v.trim();
    }
    const how = await vscode.window.showQuickPick(
      [
        { label: 'As the login user (root)', sudo: false },
        { label: 'Through sudo -n (passwordless sudo)', sudo: true },
      ],
      { title: `ProbeLens: how to run the tracing agent on ${dest}` },
    );
    if (!how) return undefined;
    const remotePrefix = await vscode.window.showInputBox({
      title: `ProbeLens: where the binary is on ${dest}`,
      prompt: `Folder on ${dest} that mirrors this workspace folder (leave empty when the binary has the same path there)`,
      placeHolder: '/srv/myapp',
    });
    if (remotePrefix === undefined) return undefined;
    const entry: TargetEntry = {
      id: `ssh:${dest}`,
      kind: 'ssh',
      label: dest,
      sudo: how.sudo,
      remotePrefix: remotePrefix.trim() || undefined,
    };
    const ssh = this.ctx.extension.globalState.get<TargetEntry[]>(TARGETS_KEY, []).filter((t) => t.id !== entry.id);
    await this.ctx.extension.globalState.update(TARGETS_KEY, [...ssh, entry]);
    await this.setActive([...new Set([...this.active().map((t) => t.id), entry.id])]);
    return entry;
  }

  /** "ProbeLens: Select Targets": which targets tracing runs on. */
  async selectActive(): Promise<void> {
    const active = new Set(this.active().map((t) => t.id));
    const items = this.all().map((t) => ({
      label: t.label,
      description: t.kind === 'local' ? 'this machine' : t.remotePrefix ? `binary under ${t.remotePrefix}` : 'SSH',
      picked: active.has(t.id),
      id: t.id,
    }));
    const picks = await vscode.window.showQuickPick(items, { canPickMany: true, title: 'ProbeLens: trace on these targets' });
    if (picks && picks.length) await this.setActive(picks.map((p) => p.id));
  }

  /** Opens the target: a LocalTarget, or an SSH connection verified against known_hosts (asking about new keys). */
  async open(t: TargetEntry): Promise<Target> {
    if (t.kind === 'local') return new LocalTarget({ sudo: t.sudo });
    return SshTarget.connect({
      destination: t.label,
      label: t.label,
      configFile: this.ctx.config.sshConfigFile,
      log: (m) => this.ctx.log(`ssh ${t.label}: ${m}`),
      onUnknownHost: (info) => this.askUnknownHost(info),
      passphrase: (keyFile, attempt) => this.secret(`passphrase:${keyFile}`, `Passphrase for ${keyFile}`, attempt),
      password: (user, host, attempt) => this.secret(`password:${user}@${host}`, `Password for ${user}@${host}`, attempt),
    });
  }

  /** Runs `fn` with an agent of its own on `t` (a connection of its own too), stopped and disconnected after. */
  async withAgent<R>(t: TargetEntry, fn: (agent: TracefsAgent) => Promise<R>): Promise<R> {
    const target = await this.open(t);
    try {
      const agent = await TracefsAgent.start(target, { sudo: t.sudo });
      try {
        return await fn(agent);
      } finally {
        await agent.stop();
        await agent.exit;
      }
    } finally {
      await target.close();
    }
  }

  private async askUnknownHost(info: UnknownHostInfo): Promise<'accept-and-record' | 'reject'> {
    const accept = 'Accept and Connect';
    const choice = await vscode.window.showWarningMessage(
      `ProbeLens: the authenticity of host '${info.hostName}' can't be established.`,
      {
        modal: true,
        detail: `${info.keyType} key fingerprint is ${info.fingerprint}.\n\nCompare it with the host's own (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on the host). Accepting records the key in ${info.knownHostsFile}.`,
      },
      accept,
    );
    return choice === accept ? 'accept-and-record' : 'reject';
  }

  private secret(key: string, prompt: string, attempt: number): Promise<string | undefined> {
    return rememberedSecret(this.ctx.extension.secrets, `probelens.ssh.${key}`, attempt, async (retry) => {
      const value = await vscode.window.showInputBox({
        title: 'ProbeLens: SSH',
        prompt: retry ? `${prompt} (try again)` : prompt,
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return undefined;
      const keep = await vscode.window.showQuickPick(['Use it for this connection only', 'Remember it (VS Code SecretStorage)'], {
        title: 'ProbeLens: keep this secret?',
        ignoreFocusOut: true,
      });
      return { value, remember: !!keep?.startsWith('Remember') };
    });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
