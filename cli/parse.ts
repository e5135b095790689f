/**
 * `npu-fault parse --from hdc|npu-smi|nvidia-smi <file> [--node <name>] [--fields <list>]`:
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
import { EXIT_DATA, EXIT_USAGE, type CliIO, type Subcommand } from './io.js';

const USAGE =
  'usage: npu-fault parse --from hdc|npu-smi|nvidia-smi <file> [--node <name>] [--fields <f1,f2,...>]';

const HELP = `${USAGE}

Turns one saved tool output into an hdc.health/v1 snapshot and prints it as JSON.

  --from <tool>     hdc (hdc health -j JSON), npu-smi (npu-smi info table), or nvidia-smi
                    (--query-gpu CSV, -q text, -q -x XML, or the default table)
  --node <name>     node name for the snapshot; default: the file's base name, lower-cased
                    and reduced to a DNS name
  --fields <list>   field list of a --format=csv,noheader file (default: the agent's
                    index,uuid,pci.bus_id,name,temperature.gpu,power.draw,...)
  --help            this text
`;

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

interface ParseArgs {
  from: ToolSource;
  file: string;
  node: string | undefined;
  fields: string[] | undefined;
}

class UsageError extends Error {}

/** Takes the value of `--flag value` or `--flag=value`. */
function flagValue(args: readonly string[], i: number, name: string): { value: string; next: number } {
  const arg = args[i] ?? '';
  const eq = arg.indexOf('=');
  if (eq >= 0) return { value: arg.slice(eq + 1), next: i };
  const value = args[i + 1];
  if (value === undefined || value.startsWith('--')) throw new UsageError(`${name} needs a value`);
  return { value, next: i + 1 };
}

function readArgs(args: readonly string[]): ParseArgs | 'help' {
  let from: string | undefined;
  let node: string | undefined;
  let fields: string[] | undefined;
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const name = arg.split('=')[0];
    if (arg === '--help' || arg === '-h') return 'help';
    if (name === '--from' || name === '--node' || name === '--fields') {
      const { value, next } = flagValue(args, i, name);
      i = next;
      if (name === '--from') from = value;
      else if (name === '--node') node = value;
      else fields = value.split(',').map((f) => f.trim());
    } else if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option '${arg}'`);
    else files.push(arg);
  }
  if (from === undefined) throw new UsageError('--from is required');
  if (!isToolSource(from))
    throw new UsageError(`--from must be one of ${TOOL_SOURCES.join(', ')}, not '${from}'`);
  if (files.length !== 1)
    throw new UsageError(
      files.length === 0 ? 'a file to parse is required' : `one file only, got ${files.length}`,
    );
  if (node !== undefined && !NODE_NAME.test(node))
    throw new UsageError(`--node '${node}' is not a Kubernetes node name (lower-case DNS name)`);
  return { from, file: files[0] ?? '', node, fields };
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
  let options: ParseArgs | 'help';
  try {
    options = readArgs(args);
  } catch (error) {
    io.stderr(`npu-fault parse: ${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  if (options === 'help') {
    io.stdout(HELP);
    return 0;
  }
  let text: string;
  try {
    text = await io.readFile(options.file);
  } catch (error) {
    const code = (error as { code?: string }).code;
    io.stderr(`npu-fault parse: ${options.file}: cannot read the file${code ? ` (${code})` : ''}\n`);
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
    io.stderr(`npu-fault parse: ${options.file}: ${error.message.split('\n')[0]}\n`);
    return EXIT_DATA;
  }
};
