// A strict argument parser for the probelens CLI: every option is declared, unknown ones are errors, values
// are checked where they are read. (No dependency: the CLI's grammar is small and fixed by docs/contracts.md.)

export type OptionSpec = { kind: 'flag' } | { kind: 'value'; repeat?: boolean };

export interface ParsedArgs {
  positionals: string[];
  flags: Set<string>;
  values: Map<string, string[]>;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export function parseArgs(argv: string[], options: Record<string, OptionSpec>): ParsedArgs {
  const out: ParsedArgs = { positionals: [], flags: new Set(), values: new Map() };
  let onlyPositionals = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (onlyPositionals || !a.startsWith('--') || a === '-') {
      out.positionals.push(a);
      continue;
    }
    if (a === '--') {
      onlyPositionals = true;
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
    const spec = options[name];
    if (!spec) throw new UsageError(`unknown option --${name}`);
    if (spec.kind === 'flag') {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      out.flags.add(name);
      continue;
    }
    let value: string;
    if (eq >= 0) value = a.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) throw new UsageError(`--${name} needs a value`);
      value = argv[++i];
    }
    const list = out.values.get(name) ?? [];
    if (list.length > 0 && !spec.repeat) throw new UsageError(`--${name} given more than once`);
    list.push(value);
    out.values.set(name, list);
  }
  return out;
}

export function oneValue(args: ParsedArgs, name: string): string | undefined {
  return args.values.get(name)?.[0];
}

export function positiveNumber(args: ParsedArgs, name: string, integer: boolean): number | undefined {
  const v = oneValue(args, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(v) || !(n > 0) || (integer && !Number.isSafeInteger(n)))
    throw new UsageError(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got '${v}'`);
  return n;
}
