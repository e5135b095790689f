/**
 * One argument parser for every subcommand, on node:util `parseArgs` (strict: unknown
 * options, missing values and values given to switches are errors). A subcommand declares
 * a `CommandSpec`; its help text is generated from the same declaration, so the two cannot
 * disagree. `--opt value` and `--opt=value` both work everywhere; `-` is a positional
 * (standard input, where a command reads a file); `--` ends the options.
 *
 * Errors are one line: `npu-fault <command>: <what>; run 'npu-fault <command> --help'`,
 * exit 2.
 */
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { EXIT_USAGE, type CliIO } from './io.js';

/** One option of a subcommand. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  /** One-letter alias (`-o`). */
  short?: string;
  /** May be given more than once (values collected in order). */
  multiple?: boolean;
  /** The placeholder shown in the help (`<file>`); string options only. */
  value?: string;
  /** One line for the help. */
  description: string;
}

/** What a subcommand accepts, and the text of its help. */
export interface CommandSpec {
  name: string;
  /** What follows `npu-fault <name> ` in the usage line. */
  synopsis: string;
  /** One line for `npu-fault --help`. */
  summary: string;
  /** Paragraphs shown between the usage line and the options. */
  description: string;
  options: Readonly<Record<string, OptionSpec>>;
  /** Positional arguments: how many, and what to call them in errors. */
  positionals: { name: string; min: number; max: number };
  /** Text after the options (exit codes, examples). */
  footer?: string;
}

/** Parsed options (by long name) and positionals. */
export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** A bad command line; its message is the one line shown to the user. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', description: 'this text' };

/** Parses `argv` against `spec`: the parsed arguments, 'help', or throws a UsageError. */
export function parseCommandLine(spec: CommandSpec, argv: readonly string[]): ParsedArgs | 'help' {
  const options: ParseArgsOptionsConfig = {};
  for (const [name, option] of Object.entries({ ...spec.options, help: HELP_OPTION })) {
    options[name] = {
      type: option.type,
      ...(option.short ? { short: option.short } : {}),
      ...(option.multiple ? { multiple: true } : {}),
    };
  }
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs({
      args: [...argv],
      options,
      allowPositionals: true,
      allowNegative: true,
      strict: true,
    }) as ParsedArgs;
  } catch (error) {
    throw new UsageError(describeParseError(error));
  }
  if (parsed.values.help === true) return 'help';
  const { name, min, max } = spec.positionals;
  const count = parsed.positionals.length;
  if (count < min) throw new UsageError(`missing ${name}`);
  if (count > max)
    throw new UsageError(
      max === 0
        ? `unexpected argument '${parsed.positionals[0]}'`
        : `${max === 1 ? 'one' : `at most ${max}`} ${name} expected, got ${count}`,
    );
  return parsed;
}

/** Turns node:util's multi-line messages into one short line naming the option. */
function describeParseError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'(-[^' ]*)/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option '${option}'`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (message.includes('does not take an argument')) return `${option} takes no value`;
    if (message.includes('ambiguous'))
      return `${option} needs a value (write ${option}=<value> for one that starts with '-')`;
    return `${option} needs a value`;
  }
  return message.split('\n')[0] ?? 'bad arguments';
}

/** The `--help` text of a subcommand. */
export function commandHelp(spec: CommandSpec): string {
  const options = Object.entries({ ...spec.options, help: HELP_OPTION }).map(([name, option]) => {
    const flag = `${option.short ? `-${option.short}, ` : ''}--${name}${option.value ? ` ${option.value}` : ''}`;
    return [flag, option.description] as const;
  });
  const width = Math.max(...options.map(([flag]) => flag.length));
  const lines = [
    `Usage: npu-fault ${spec.name} ${spec.synopsis}`.trimEnd(),
    '',
    spec.description.trimEnd(),
    '',
    'Options:',
    ...options.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
  ];
  if (spec.footer) lines.push('', spec.footer.trimEnd());
  return `${lines.join('\n')}\n`;
}

/**
 * Parses and settles a command line: prints the help (returns 0) or a one-line usage error
 * (returns 2), or returns what `convert` made of the arguments. `convert` checks values and
 * throws a UsageError naming the option.
 */
export function settleCommandLine<T>(
  spec: CommandSpec,
  argv: readonly string[],
  io: CliIO,
  convert: (args: ParsedArgs) => T,
): T | { exit: number } {
  try {
    const parsed = parseCommandLine(spec, argv);
    if (parsed === 'help') {
      io.stdout(commandHelp(spec));
      return { exit: 0 };
    }
    return convert(parsed);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(`npu-fault ${spec.name}: ${error.message}; run 'npu-fault ${spec.name} --help'\n`);
    return { exit: EXIT_USAGE };
  }
}

/** True when `settleCommandLine` finished the command (help shown or usage error). */
export function isExit<T>(value: T | { exit: number }): value is { exit: number } {
  return typeof value === 'object' && value !== null && 'exit' in value && Object.keys(value).length === 1;
}

/** A string option's value, or undefined. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A boolean option's value (false when absent). */
export function booleanOption(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

/** A numeric option: undefined when absent, else a number within bounds or a UsageError. */
export function numberOption(
  args: ParsedArgs,
  name: string,
  bounds: { min?: number; integer?: boolean; above?: number } = {},
): number | undefined {
  const text = stringOption(args, name);
  if (text === undefined) return undefined;
  const value = text.trim() === '' ? Number.NaN : Number(text);
  const kind = bounds.integer ? 'a whole number' : 'a number';
  const ok =
    Number.isFinite(value) &&
    (!bounds.integer || Number.isInteger(value)) &&
    (bounds.min === undefined || value >= bounds.min) &&
    (bounds.above === undefined || value > bounds.above);
  if (!ok) {
    const range =
      bounds.min !== undefined ? ` >= ${bounds.min}` : bounds.above !== undefined ? ` > ${bounds.above}` : '';
    throw new UsageError(`--${name} must be ${kind}${range}, not '${excerpt(text)}'`);
  }
  return value;
}

/** A value quoted in an error: short and free of control characters. */
export function excerpt(text: string, max = 40): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(cut).slice(1, -1);
}

/** The longest duration an option takes (a wait or a threshold). */
const MAX_DURATION_MS = 24 * 3600_000;

/**
 * A duration: `500ms`, `90s`, `2m`, `1h`, or a bare number of seconds; more than zero and at
 * most a day. Returns milliseconds.
 */
export function parseDuration(text: string, option: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3600_000 }[match?.[2] ?? 's'] ?? 1000;
  const ms = match ? Number(match[1]) * unit : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0 || ms > MAX_DURATION_MS)
    throw new UsageError(
      `${option} must be a duration such as 90s, 2m or 500ms (at most 24h), not '${excerpt(text)}'`,
    );
  return Math.round(ms);
}
