/**
 * `npu-fault replay <snapshots.jsonl|-> [--rules <file>] [--published]` (CONTRACT §4):
 * streams recorded snapshots through the detection engine (core/replay) and prints one JSON
 * line per change of published status, or with --published the final fault.json.
 * The trace is read line by line, so its size is bounded by nothing but the disk; memory
 * grows with the fleet and the number of changes printed.
 */
import { DEFAULT_RULES, type Rules } from '../contracts/index.js';
import { NpuFaultError } from '../core/errors.js';
import {
  LineTooLongError,
  formatTransition,
  replayLines,
  splitLines,
  type ReplayResult,
} from '../core/replay/index.js';
import { parseRules, RulesError } from '../core/rules/index.js';
import { booleanOption, isExit, settleCommandLine, stringOption } from './args.js';
import { REPLAY } from './specs.js';
import { EXIT_DATA, cannotRead, inputName, type CliIO, type Subcommand } from './io.js';

interface ReplayOptions {
  file: string;
  rules: string | undefined;
  published: boolean;
}

/** The replay subcommand. */
export const replay: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const options = settleCommandLine(REPLAY, args, io, (parsed): ReplayOptions => ({
    file: parsed.positionals[0] as string,
    rules: stringOption(parsed, 'rules'),
    published: booleanOption(parsed, 'published'),
  }));
  if (isExit(options)) return options.exit;
  let result: ReplayResult;
  try {
    const rules = options.rules === undefined ? DEFAULT_RULES : await loadRules(io, options.rules);
    result = await replayLines(lines(io, options.file), inputName(options.file), rules);
  } catch (error) {
    if (!(error instanceof NpuFaultError || error instanceof InputError)) throw error;
    io.stderr(`npu-fault replay: ${error.message}\n`);
    return EXIT_DATA;
  }
  if (options.published) io.stdout(`${JSON.stringify(result.document, null, 2)}\n`);
  else io.stdout(result.transitions.map((t) => `${formatTransition(t)}\n`).join(''));
  return 0;
};

/** An input that could not be read (as opposed to one that was read and is wrong). */
class InputError extends Error {}

async function* lines(io: CliIO, path: string): AsyncGenerator<{ text: string; line: number }> {
  const chunks = io.readStream(path);
  try {
    yield* splitLines(chunks);
  } catch (error) {
    if (error instanceof LineTooLongError)
      throw new InputError(`${inputName(path)}:${error.line}: ${error.message}; not a snapshot line`);
    throw new InputError(cannotRead(path, error), { cause: error });
  }
}

async function loadRules(io: CliIO, path: string): Promise<Rules> {
  let text: string;
  try {
    text = await io.readFile(path);
  } catch (error) {
    throw new InputError(cannotRead(path, error), { cause: error });
  }
  try {
    return parseRules(text);
  } catch (error) {
    if (error instanceof RulesError) throw new InputError(error.describe(inputName(path)), { cause: error });
    throw error;
  }
}
