// Composes the target-side agent, agent/agent.sh with its blocks inlined, into the one text run as
// `sh -c AGENT_SCRIPT probelens-agent` (dash, busybox ash, bash). src/core/tracefs/agentClient.ts is the client.
// Tests: test/unit/core/tracefs/agentScript.test.ts (and shellcheck in `npm run lint`, scripts/shellcheck-agent.mjs)
import { agentSource } from './agentSources';

export const AGENT_PROTOCOL_VERSION = 1;

export const AGENT_ARGV0 = 'probelens-agent';

/** The agent's files in the order they are composed, for the lint that checks them. */
export const AGENT_FILES = ['agent.sh', 'groups.sh', 'profile.sh', 'watchdog.sh', 'watcher.sh', 'hist.sh', 'raw.sh', 'procs.sh'];

/** One line of the composed agent, with the file and line it comes from (the lint's messages name them). */
export interface AgentLine {
  file: string;
  line: number;
  text: string;
}

/**
 * A file's lines with each `#include NAME` line replaced by that file's lines, and each `'@lease.pl@'` (a quoted mark)
 * by that lease guard's text, which must hold no single quote of its own.
 */
export function agentLines(name: string): AgentLine[] {
  const out: AgentLine[] = [];
  agentSource(name)
    .replace(/\n$/, '')
    .split('\n')
    .forEach((text, i) => {
      const include = /^#include (\S+)$/.exec(text);
      if (include) {
        out.push(...agentLines(include[1]));
        return;
      }
      const mark = /'@(lease\.p[ly])@'/.exec(text);
      if (!mark) {
        out.push({ file: name, line: i + 1, text });
        return;
      }
      const guard = agentSource(mark[1]).replace(/\n$/, '');
      if (guard.includes("'")) throw new Error(`agent/${mark[1]} holds a single quote`);
      const lines = `${text.slice(0, mark.index)}'${guard}'${text.slice(mark.index + mark[0].length)}`.split('\n');
      lines.forEach((t, k) => out.push(k === 0 ? { file: name, line: i + 1, text: t } : { file: mark[1], line: k + 1, text: t }));
    });
  return out;
}

/** A file of the agent composed (see agentLines). */
export function composeAgent(name: string): string {
  return `${agentLines(name)
    .map((l) => l.text)
    .join('\n')}\n`;
}

export const AGENT_SCRIPT = composeAgent('agent.sh');
