// Which stream a session's agent ships: the instance's ring-buffer pages (the binary stream: agent/raw.sh,
// rawStream.ts), or its trace_pipe text framed by a secret (hitParser.ts). `auto`, the default, takes the pages
// wherever the agent's RAW check passes on the target and falls back to text, saying why, where it does not (no
// trace_pipe_raw, reads that do not end on an empty buffer, no dd); `raw` insists (a target that cannot is an
// error); `text` keeps the text path. PROBELENS_STREAM sets the choice where the caller gives none.
// Tests: test/unit/core/session/streamChoice.test.ts, test/integration/sessionStream.test.ts
import { AgentError, type RawSetup, type TracefsAgent } from '../tracefs/agentClient';

export type StreamKind = 'raw' | 'text';
export type StreamChoice = 'auto' | StreamKind;

/** The choice PROBELENS_STREAM makes (unset or empty: auto); anything else is refused in one sentence. */
export function streamChoiceFrom(value: string | undefined = process.env.PROBELENS_STREAM): StreamChoice {
  if (value === undefined || value === '') return 'auto';
  if (value === 'auto' || value === 'raw' || value === 'text') return value;
  throw new Error(`PROBELENS_STREAM is '${value}': it takes raw, text or auto`);
}

export interface ChosenStream {
  kind: StreamKind;
  /** Why the stream is text (asked for, or what the target lacks). */
  note?: string;
  /** The binary stream's page layout (raw only). */
  setup?: RawSetup;
}

/** Asks the agent (before anything is defined) for the stream `choice` names. */
export async function chooseStream(agent: TracefsAgent, choice: StreamChoice = streamChoiceFrom()): Promise<ChosenStream> {
  if (choice === 'text') return { kind: 'text', note: 'the text stream was asked for' };
  try {
    return { kind: 'raw', setup: await agent.useRawStream() };
  } catch (e) {
    if (!(e instanceof AgentError) || choice === 'raw') throw e;
    return { kind: 'text', note: `ring-buffer pages cannot be read there (${e.message})` };
  }
}
