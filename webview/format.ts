// How numbers look in the panel: the same formatters as the CLI and the editor (src/shared/hitText).
import { formatDuration } from '../src/shared/hitText';

export { formatCount, formatDuration, formatTs } from '../src/shared/hitText';

/** Label of log2 bucket i, its lower bound: 1ns, 2ns, …, 1µs, … */
export function bucketLabel(i: number): string {
  return formatDuration(2 ** i);
}
