// Typed access to ProbeLens's settings (rust-analyzer's Config habit): one getter per setting, defaults in one
// place, and the "did anything I care about change" test next to them.
// Tests: test/e2e/indexLimit.test.ts, test/e2e/binaryDiscovery.test.ts
import * as vscode from 'vscode';
import type { PathMappings } from './model/pathMapping';
import { nameRecord } from '../shared/names';

const SECTION = 'probelens';

export class Config {
  private get cfg(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration(SECTION);
  }

  /** Workspace-relative globs of the binaries to index; empty = discover them. */
  get binaries(): string[] {
    return this.cfg.get<string[]>('binaries', []).filter((g) => typeof g === 'string' && g.trim() !== '');
  }

  get pathMappings(): PathMappings {
    const m = this.cfg.get<Record<string, unknown>>('pathMappings', nameRecord());
    return nameRecord(Object.entries(m ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'));
  }

  /** debuginfod servers; undefined: DEBUGINFOD_URLS. */
  get debuginfodUrls(): string | undefined {
    return this.cfg.get<string>('debuginfodUrls', '').trim() || undefined;
  }

  get debugDirs(): string[] {
    return this.cfg.get<string[]>('debugDirs', []);
  }

  /** Fixed limits for indexing one binary (0: scaled to its DWARF). */
  get indexLimits(): { timeLimitSeconds: number; memoryLimitMb: number } {
    const n = (key: string) => Math.max(0, Number(this.cfg.get<number>(key, 0)) || 0);
    return { timeLimitSeconds: n('index.timeLimitSeconds'), memoryLimitMb: n('index.memoryLimitMb') };
  }

  get codeLensEnabled(): boolean {
    return this.cfg.get<boolean>('codeLens.enabled', true);
  }

  get codeLens(): { trace: boolean; returns: boolean; latency: boolean } {
    return {
      trace: this.cfg.get<boolean>('codeLens.trace', true),
      returns: this.cfg.get<boolean>('codeLens.returns', true),
      latency: this.cfg.get<boolean>('codeLens.latency', true),
    };
  }

  get inlineResults(): boolean {
    return this.cfg.get<boolean>('inlineResults.enabled', true);
  }

  /** How often live numbers (decorations, lenses, tree, status bar) are redrawn; never faster than 4 times a second. */
  get refreshMs(): number {
    return Math.max(250, this.cfg.get<number>('refreshIntervalMs', 500));
  }

  /** ssh config file read for SSH targets (`ssh -F`); empty = ~/.ssh/config then /etc/ssh/ssh_config. */
  get sshConfigFile(): string | undefined {
    const f = this.cfg.get<string>('ssh.configFile', '').trim();
    return f ? f.replace(/^~(?=\/|$)/, process.env.HOME ?? '~') : undefined;
  }

  /** Each session's ring buffer per CPU, in KiB (0: the kernel's default). */
  get bufferKb(): number {
    return Math.max(0, Math.floor(Number(this.cfg.get<number>('bufferKb', 0)) || 0));
  }

  /** Whether the workspace is a kernel tree: 'auto' looks at its root (model/cDefinitions.ts isKernelTreeRoot). */
  get kernelTree(): 'auto' | 'yes' | 'no' {
    const v = this.cfg.get<string>('kernelTree', 'auto');
    return v === 'yes' || v === 'no' ? v : 'auto';
  }

  get localSudo(): boolean {
    return this.cfg.get<boolean>('local.sudo', false);
  }

  static affects(e: vscode.ConfigurationChangeEvent, key?: string): boolean {
    return e.affectsConfiguration(key ? `${SECTION}.${key}` : SECTION);
  }
}
