/**
 * `npu-fault parse --from hdc|npu-smi|nvidia-smi <file|-> [--node <name>] [--fields <list>]`:
 * turns one real tool output into an `hdc.health/v1` snapshot and prints it (2-space JSON).
 *
 * - node: `--node`, else the file's base name without extension, lower-cased and reduced to
 *   a DNS name (`GPU_Node 7.txt` -> `gpu-node-7`), since a snapshot must name a valid node.
 * - collected_at: the time the output prints (nvidia-smi's date line or `-q` Timestamp, read
 *   as UTC), else now.
 * - seq 1, boot_id '' (one anonymous boot), collector: the `--from` value.
 *
 * Exit 0 on success, 2 on bad usage, 1 on bad input with one line naming the file and the
 * line or field; never a stack trace.
 */
import { NpuFaultError } from '../core/errors.js';
import { isToolSource, parseToolOutput, TOOL_SOURCES, type ToolSource } from '../core/parsers/index.js';
import { excerpt, isExit, settleCommandLine, stringOption, UsageError, type ParsedArgs } from './args.js';
import { EXIT_DATA, cannotRead, inputName, type CliIO, type Subcommand } from './io.js';
import { PARSE } from './specs.js';

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

interface ParseOptions {
  from: ToolSource;
  file: string;
  node: string | undefined;
  fields: string[] | undefined;
}

function toOptions(args: ParsedArgs): ParseOptions {
  const from = stringOption(args, 'from');
  const node = stringOption(args, 'node');
  const fields = stringOption(args, 'fields');
  if (from === undefined) throw new UsageError('--from is required');
  if (!isToolSource(from))
    throw new UsageError(`--from must be one of ${TOOL_SOURCES.join(', ')}, not '${excerpt(from)}'`);
  if (node !== undefined && !NODE_NAME.test(node))
    throw new UsageError(`--node '${excerpt(node)}' is not a Kubernetes node name (lower-case DNS name)`);
  return {
    from,
    file: args.positionals[0] as string,
    node,
    fields: fields?.split(',').map((f) => f.trim()),
  };
}

/** The default node name: the file's base name without extension, as a DNS name. */
export function nodeNameFromFile(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? '';
  const stem = base.replace(/\.[A-Za-z0-9]+$/, '');
  const name = stem
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .slice(0, 253)
    .replace(/[^a-z0-9]+$/, '');
  return name === '' ? 'node' : name;
}

/** `npu-fault parse`: see the module comment. */
export const parse: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const options = settleCommandLine(PARSE, args, io, toOptions);
  if (isExit(options)) return options.exit;
  let text: string;
  try {
    text = await io.readFile(options.file);
  } catch (error) {
    io.stderr(`npu-fault parse: ${cannotRead(options.file, error)}\n`);
    return EXIT_DATA;
  }
  try {
    const snapshot = parseToolOutput(options.from, text, {
      node: options.node ?? nodeNameFromFile(options.file),
      // cli/ may read the clock; core/ never does. Used only when the output prints no time.
      collectedAt: new Date().toISOString(),
      preferOutputTimestamp: true,
      seq: 1,
      bootId: '',
      collector: options.from,
      ...(options.fields ? { fields: options.fields } : {}),
    });
    // A whole hdc envelope names its node; an explicit --node still has the last word.
    if (options.node !== undefined) snapshot.node = options.node;
    io.stdout(`${JSON.stringify(snapshot, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof NpuFaultError)) throw error;
    io.stderr(`npu-fault parse: ${inputName(options.file)}: ${error.message.split('\n')[0]}\n`);
    return EXIT_DATA;
  }
};
