/**
 * `npu-fault replay <snapshots.jsonl> [--rules <file>] [--published]` (CONTRACT §4): feeds
 * recorded snapshots through the same normalisation and detection code the controller runs,
 * with collected_at as the clock, and prints one JSON line per change of published status
 * (or, with --published, the final fault.json).
 *
 * Determinism: snapshots are grouped per node in file order and merged by each node's
 * running-maximum collected_at (ties: node name, then file order). So the output depends
 * only on each node's own sequence, never on how nodes interleave in the file, while a
 * node's duplicates and reordering still reach the engine's dedup as recorded.
 * `now` is the largest collected_at so far; before time advances to T, overlay deadlines
 * earlier than T fire (stamped at the deadline), so a snapshot at exactly last_seen + 5 s
 * is in time. Output is sorted by (at, node, npu).
 */
import { admit, newBootTrack, type BootTrack } from '../core/engine/dedup.js';
import { createEngine, compareText, type Transition } from '../core/engine/index.js';
import { fromZodError } from '../core/errors.js';
import { parseRules, RulesError } from '../core/rules/index.js';
import { DEFAULT_RULES, type Rules } from '../contracts/rules.js';
import { snapshotSchema, type Snapshot } from '../contracts/snapshot.js';
import type { PublishedDocument } from '../contracts/published.js';
import { EXIT_DATA, settleArgs, type CliIO, type Subcommand } from './io.js';

const HELP = `Usage: npu-fault replay <snapshots.jsonl> [--rules <file>] [--published]

Feeds hdc.health/v1 snapshots (one JSON object per line; blank lines are skipped) through
the detection engine, using collected_at as the clock, and prints one JSON line per change
of a device's published status:
  {"at":"<ISO time>","node":"…","npu":"npu3","from":"healthy","to":"degraded","reason":"high-temp"}

Options:
  --rules <file>  rules file (YAML or JSON); default: the built-in defaults
  --published     print the final fault.json document instead of the transitions
  -h, --help      this text

Every line is validated before anything runs: the first bad line stops the replay with
'<file>:<line>: <field>: <message>' on stderr, exit 1, and nothing on stdout.
Exit codes: 0 done, 1 bad input (snapshots or rules), 2 bad usage.
`;

interface ReplayArgs {
  file: string;
  rules?: string;
  published: boolean;
}

/** The replay subcommand. */
export const replay: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const parsed = settleArgs('replay', parseArgs(args), HELP, io);
  if (typeof parsed === 'number') return parsed;
  let rules: Rules = DEFAULT_RULES;
  let snapshots: Snapshot[];
  try {
    if (parsed.rules !== undefined) rules = loadRules(parsed.rules, await read(io, parsed.rules));
    snapshots = parseSnapshots(parsed.file, await read(io, parsed.file));
  } catch (error) {
    io.stderr(`npu-fault replay: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_DATA;
  }
  const result = runReplay(snapshots, rules);
  if (parsed.published) {
    io.stdout(`${JSON.stringify(result.document, null, 2)}\n`);
  } else {
    io.stdout(result.transitions.map((t) => `${formatTransition(t)}\n`).join(''));
  }
  return 0;
};

function parseArgs(args: string[]): ReplayArgs | 'help' | string {
  const files: string[] = [];
  let rules: string | undefined;
  let published = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--help' || arg === '-h') return 'help';
    if (arg === '--published') published = true;
    else if (arg === '--rules') {
      rules = args[++i];
      if (rules === undefined) return '--rules needs a file';
    } else if (arg.startsWith('--rules=')) rules = arg.slice('--rules='.length);
    else if (arg.startsWith('-') && arg !== '-') return `unknown option '${arg}'`;
    else files.push(arg);
  }
  if (files.length !== 1)
    return files.length === 0
      ? 'missing <snapshots.jsonl>'
      : `one snapshots file expected, got ${files.length}`;
  return { file: files[0] as string, rules, published };
}

async function read(io: CliIO, path: string): Promise<string> {
  try {
    return await io.readFile(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new Error(`${path}: cannot read${typeof code === 'string' ? ` (${code})` : ''}`, { cause: error });
  }
}

function loadRules(path: string, text: string): Rules {
  try {
    return parseRules(text);
  } catch (error) {
    throw error instanceof RulesError ? new Error(error.describe(path), { cause: error }) : error;
  }
}

/** Parses and validates every line; throws `<file>:<line>: <field>: <message>` at the first bad one. */
export function parseSnapshots(file: string, text: string): Snapshot[] {
  const out: Snapshot[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`${file}:${i + 1}: invalid JSON: ${(error as Error).message.split('\n')[0]}`);
    }
    const result = snapshotSchema.safeParse(value);
    if (!result.success) throw new Error(`${file}:${i + 1}: ${fromZodError(result.error).message}`);
    out.push(result.data);
  }
  return out;
}

/** What a replay produced. */
export interface ReplayResult {
  /** Every change of published status, sorted by (at, node, npu). */
  transitions: Transition[];
  /** The final document (publisher `replay`, term 0, timestamp = final now). */
  document: PublishedDocument;
  /** The final `now` (epoch ms); NaN for an empty input. */
  now: number;
}

/** Runs validated snapshots through a fresh engine (the code path of the CLI, without I/O). */
export function runReplay(snapshots: readonly Snapshot[], rules: Rules = DEFAULT_RULES): ReplayResult {
  const engine = createEngine(rules);
  const transitions: Transition[] = [];
  let now = Number.NaN;
  for (const { snapshot, time } of mergeByNode(snapshots)) {
    if (Number.isNaN(now) || time > now) {
      if (!Number.isNaN(now)) transitions.push(...engine.tick(time - 1));
      now = time;
    }
    transitions.push(...engine.observe(snapshot, now).transitions);
  }
  if (!Number.isNaN(now)) transitions.push(...engine.tick(now));
  transitions.sort(
    (a, b) => compareIso(a.at, b.at) || compareText(a.node, b.node) || compareText(a.npu, b.npu),
  );
  const document = engine.document(Number.isNaN(now) ? 0 : now, { identity: 'replay', term: 0 });
  return { transitions, document, now };
}

/** The replay line of a transition (the stable key is not printed). */
export function formatTransition(t: Transition): string {
  return JSON.stringify({ at: t.at, node: t.node, npu: t.npu, from: t.from, to: t.to, reason: t.reason });
}

/** ISO-8601 UTC strings of one format order as text. */
function compareIso(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

interface Timed {
  snapshot: Snapshot;
  /** The running maximum of collected_at over the node's snapshots up to this one. */
  time: number;
  index: number;
}

function mergeByNode(snapshots: readonly Snapshot[]): Timed[] {
  const highest = new Map<string, number>();
  // The engine's own admission rule, run ahead: a snapshot it will drop (duplicate, older seq,
  // old boot) must not move its node's clock, or a stale deadline could fire too early.
  const admission = new Map<string, BootTrack>();
  const timed = snapshots.map((snapshot, index): Timed => {
    const t = Date.parse(snapshot.collected_at);
    let track = admission.get(snapshot.node);
    if (!track) admission.set(snapshot.node, (track = newBootTrack()));
    const verdict = admit(track, snapshot.boot_id, snapshot.seq);
    const before = highest.get(snapshot.node) ?? t;
    const time = verdict === 'next' || verdict === 'new-boot' ? Math.max(t, before) : before;
    highest.set(snapshot.node, time);
    return { snapshot, time, index };
  });
  return timed.sort(
    (a, b) => a.time - b.time || compareText(a.snapshot.node, b.snapshot.node) || a.index - b.index,
  );
}
