/**
 * Every parser runs in time linear in its input, whatever the input: a 5 MB line, 80,000
 * blanks in a table cell, a million unterminated `<!--`. Proven in two halves, neither of
 * which looks at a clock (a wall-clock limit passes on a fast machine and fails on a busy one,
 * and says nothing about the next input):
 *
 * 1. Structure. Every regular expression literal in the .ts files of core/parsers (its
 *    subfolders too) and core/errors.ts is parsed out of the source (TypeScript's own parser)
 *    and must pass `auditRegex` (hack/lint/regex-audit.ts): no exponential and no polynomial
 *    backtracking, so each match or search costs at most a constant times the length of the
 *    string it is given, for every string. No RegExp may be built at run time, where the audit
 *    could not see it. This is the half that catches catastrophic backtracking: the patterns
 *    the parsers used before (`\s+$`, `^\s*([^:]*?)\s*:`, the one-regex nvidia table row, ...)
 *    all fail it (hack/lint/regex-audit.test.ts).
 *
 * 2. Work. Each parser is run on an input of size n and of size 8n built the same way
 *    (hostile shapes embedded in valid outputs of every format, random ones from fast-check
 *    and targeted ones), and a deterministic work count must grow at most about 8-fold
 *    (quadratic work grows 64-fold). The count: while a parser runs, the built-ins that scan
 *    (String and Array methods, RegExp exec/test/split/replace/match, JSON.parse) are wrapped
 *    to add what they are handed (the receiver's length, or the stretch actually searched for
 *    `indexOf` from an offset and for global regex steps). By half 1 each such call costs at
 *    most a constant per character counted, so a linear count is linear time. This half
 *    catches algorithms that rescan: a search from every line over the whole text, a list of
 *    events searched again for every line.
 *
 * What neither half sees: plain loops over characters written in the parsers (bounded by
 * review: each index only moves forward) and string concatenation.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { auditRegex } from '../../hack/lint/regex-audit.js';
import {
  parseKernelEvents,
  parseNodeKernelEvents,
  parseNvlinkStatus,
  parseToolOutput,
  parseXidEvents,
  type ToolSource,
} from './index.js';
import { parseNpuSmiInfo, parseNpuSmiMapping } from './npu-smi.js';
import { nvlinkH200 } from './nvidia-smi/testing.js';
import {
  HDC_ENVELOPE,
  KMSG,
  NPU_SMI_310P_TABLE,
  NPU_SMI_910B_TABLE,
  NPU_SMI_A3_TABLE,
  NPU_SMI_MAPPING,
  NPU_SMI_T_ECC,
  NPU_SMI_T_HEALTH,
  NPU_SMI_T_POWER,
  NVIDIA_CSV,
  NVIDIA_CSV_NOHEADER,
  NVIDIA_Q,
  NVIDIA_TABLE,
  NVIDIA_XML,
  NODE_KERNEL_SAMPLES,
} from './testing.js';

/** Every recorded node-problem line of the kernel log, as one log. */
const NODE_KERNEL_LOG = NODE_KERNEL_SAMPLES.map((sample) => sample.line).join('\n');

// ---------------------------------------------------------------------------------------------
// Half 1: every regex literal passes the backtracking audit

const CORE = fileURLToPath(new URL('../', import.meta.url));
const SOURCES = [
  ...readdirSync(`${CORE}parsers`, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
    .map((name) => `parsers/${name}`),
  'errors.ts',
].sort();

interface Literal {
  where: string;
  source: string;
  flags: string;
}

/** Regex literals and RegExp constructions of one source file, found by TypeScript's parser. */
function scan(file: string): { literals: Literal[]; constructed: string[] } {
  const text = readFileSync(CORE + file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2023, true);
  const literals: Literal[] = [];
  const constructed: string[] = [];
  const where = (node: ts.Node): string =>
    `${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const literal = node.getText(sf);
      const slash = literal.lastIndexOf('/');
      literals.push({ where: where(node), source: literal.slice(1, slash), flags: literal.slice(slash + 1) });
    }
    if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && node.expression.getText(sf) === 'RegExp')
      constructed.push(where(node));
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { literals, constructed };
}

const scanned = SOURCES.map((file) => ({ file, ...scan(file) }));
const literals = scanned.flatMap((s) => s.literals);

describe('every regular expression in core/parsers and core/errors.ts backtracks at most linearly', () => {
  it('finds the parsers’ patterns (the scan is not vacuous)', () => {
    expect(literals.length).toBeGreaterThan(30);
    expect(literals.map((l) => l.where)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^parsers\/nvidia-smi\/csv\.ts:/)]),
    );
  });

  it.each(literals.map((l) => [`${l.where} /${l.source}/${l.flags}`, l] as const))('%s', (_name, literal) => {
    expect(auditRegex(literal.source, literal.flags)).toBeNull();
  });

  it('builds no RegExp at run time, where the audit could not see it', () => {
    const constructed = scanned.flatMap((s) => s.constructed);
    expect(constructed).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Half 2: the work a parse does grows linearly

/** The work counter the wrapped built-ins add to, and whether a measurement is running. */
const meter = { work: 0, counting: false, inRegex: 0 };

type Method = (this: unknown, ...args: unknown[]) => unknown;
type Cost = (self: unknown, args: readonly unknown[], result: unknown, before: number) => number;

const lengthOf = (value: unknown): number =>
  typeof value === 'string' || Array.isArray(value) ? value.length : String(value).length;
const receiver: Cost = (self) => lengthOf(self);
const resultLength: Cost = (_self, _args, result) => lengthOf(result);
const restored: Array<() => void> = [];

/** Wraps `target[key]` so that, while measuring, each call adds `cost` to the meter. */
function wrap(target: object, key: PropertyKey, cost: Cost, regex = false): void {
  const holder = target as Record<PropertyKey, Method>;
  const original = holder[key] as Method;
  const wrapper = function (this: unknown, ...args: unknown[]): unknown {
    if (!meter.counting || (regex && meter.inRegex > 0)) return original.apply(this, args);
    // A regex built-in calls `exec` internally (spec slow path): count the outer call only.
    const before = this instanceof RegExp ? this.lastIndex : 0;
    if (regex) meter.inRegex++;
    try {
      const result = original.apply(this, args);
      meter.work += cost(this, args, result, before);
      return result;
    } finally {
      if (regex) meter.inRegex--;
    }
  };
  Object.defineProperty(target, key, { value: wrapper, writable: true, configurable: true });
  restored.push(() =>
    Object.defineProperty(target, key, { value: original, writable: true, configurable: true }),
  );
}

/** `indexOf(needle, from)`: the stretch actually searched. */
const searched: Cost = (self, args, result) => {
  const length = lengthOf(self);
  const from = Math.min(Math.max(Number(args[1] ?? 0) || 0, 0), length);
  const found = typeof result === 'number' && result >= 0 ? result + lengthOf(args[0]) : length;
  return Math.max(found - from, 1);
};

/** A regex step: from lastIndex to the match's end for global/sticky patterns, else the whole subject. */
const regexStep: Cost = (self, args, result, before) => {
  const subject = lengthOf(args[0]);
  if (!(self instanceof RegExp) || !(self.global || self.sticky)) return subject;
  if (result === null || result === false) return Math.max(subject - before, 1);
  return Math.max(self.lastIndex - before, 1);
};

function installMeter(): void {
  for (const key of [
    'trim',
    'trimStart',
    'trimEnd',
    'toLowerCase',
    'toUpperCase',
    'split',
    'includes',
    'replace',
    'replaceAll',
    'match',
    'matchAll',
    'search',
    'padStart',
    'padEnd',
    'normalize',
  ])
    wrap(String.prototype, key, receiver);
  wrap(String.prototype, 'indexOf', searched);
  wrap(String.prototype, 'lastIndexOf', receiver);
  wrap(String.prototype, 'startsWith', (_self, args) => lengthOf(args[0]));
  wrap(String.prototype, 'endsWith', (_self, args) => lengthOf(args[0]));
  for (const key of ['slice', 'substring', 'substr']) wrap(String.prototype, key, resultLength);
  for (const key of [
    'map',
    'filter',
    'forEach',
    'some',
    'every',
    'find',
    'findIndex',
    'findLast',
    'findLastIndex',
    'reduce',
    'flatMap',
    'flat',
    'indexOf',
    'lastIndexOf',
    'includes',
    'join',
    'reverse',
    'concat',
    'splice',
    'entries',
    'keys',
    'values',
    Symbol.iterator,
  ])
    wrap(Array.prototype, key, receiver);
  wrap(Array.prototype, 'slice', resultLength);
  wrap(RegExp.prototype, 'exec', regexStep, true);
  wrap(RegExp.prototype, 'test', regexStep, true);
  for (const key of [Symbol.split, Symbol.replace, Symbol.match, Symbol.matchAll, Symbol.search])
    wrap(RegExp.prototype, key, (_self, args) => lengthOf(args[0]), true);
  wrap(JSON, 'parse', (_self, args) => lengthOf(args[0]));
}

/** The work one parse does; its result or error does not matter here (robustness.test.ts judges those). */
function measure(parse: () => unknown): number {
  meter.work = 0;
  meter.counting = true;
  try {
    parse();
  } catch {
    // An error after linear work is as good as a result for this test.
  } finally {
    meter.counting = false;
  }
  return meter.work;
}

/** How many times more work an input 8 times as large costs; linear work gives at most 8. */
function growth(build: (n: number) => string, parse: (text: string) => unknown, n: number): number {
  const small = build(n);
  const large = build(8 * n);
  return (
    measure(() => parse(large)) /
    Math.max(
      measure(() => parse(small)),
      1,
    )
  );
}

/** Linear work grows at most 8-fold (a fixed part only lowers it); quadratic grows about 64-fold. */
const LINEAR_BOUND = 10;

const OPTIONS = {
  node: 'n1',
  collectedAt: '2026-01-01T00:00:00.000Z',
  seq: 1,
  bootId: '',
  collector: 'test',
};
const tool =
  (from: ToolSource) =>
  (text: string): unknown =>
    parseToolOutput(from, text, OPTIONS);

/** Every parser, each with a valid output to embed hostile text in. */
const PARSERS: ReadonlyArray<{ name: string; sample: string; parse: (text: string) => unknown }> = [
  { name: 'npu-smi table 910B', sample: NPU_SMI_910B_TABLE, parse: tool('npu-smi') },
  { name: 'npu-smi table A3', sample: NPU_SMI_A3_TABLE, parse: tool('npu-smi') },
  { name: 'npu-smi table 310P', sample: NPU_SMI_310P_TABLE, parse: tool('npu-smi') },
  { name: 'npu-smi -t health', sample: NPU_SMI_T_HEALTH, parse: parseNpuSmiInfo },
  { name: 'npu-smi -t ecc', sample: NPU_SMI_T_ECC, parse: parseNpuSmiInfo },
  { name: 'npu-smi -t power', sample: NPU_SMI_T_POWER, parse: parseNpuSmiInfo },
  { name: 'npu-smi -m', sample: NPU_SMI_MAPPING, parse: parseNpuSmiMapping },
  { name: 'nvidia-smi csv', sample: NVIDIA_CSV, parse: tool('nvidia-smi') },
  { name: 'nvidia-smi csv noheader', sample: NVIDIA_CSV_NOHEADER, parse: tool('nvidia-smi') },
  { name: 'nvidia-smi -q', sample: NVIDIA_Q, parse: tool('nvidia-smi') },
  { name: 'nvidia-smi -q -x', sample: NVIDIA_XML, parse: tool('nvidia-smi') },
  { name: 'nvidia-smi table', sample: NVIDIA_TABLE, parse: tool('nvidia-smi') },
  { name: 'kernel log', sample: KMSG, parse: parseXidEvents },
  { name: 'kernel events', sample: KMSG, parse: parseKernelEvents },
  { name: 'kernel node events', sample: NODE_KERNEL_LOG, parse: parseNodeKernelEvents },
  { name: 'nvidia-smi nvlink --status', sample: nvlinkH200((gpu) => gpu === 3), parse: parseNvlinkStatus },
  { name: 'hdc json', sample: HDC_ENVELOPE, parse: tool('hdc') },
];

/** Units repeated n times: blanks, separators and the characters each grammar cares about. */
const HOSTILE_UNITS = [
  ' ',
  '\t',
  ' \t',
  '\u3000',
  'a',
  'a ',
  '0',
  '0 ',
  ':',
  'a:',
  ' :',
  '|',
  ' |',
  '/',
  ' / ',
  ',',
  ', ',
  '<',
  '<a',
  '<!--',
  '<?',
  '"',
  '=',
  '-',
  '.',
  '(',
  '[',
  '{',
  '[[',
  'x=',
  'GPU ',
];

type Placement = 'append' | 'prepend' | 'middle' | 'replace' | 'lines';

/** The sample with `unit` repeated n times at line `at` (or as n lines of their own). */
function embed(sample: string, unit: string, placement: Placement, at: number) {
  return (n: number): string => {
    const lines = sample.split('\n');
    const i = at % lines.length;
    const line = lines[i] ?? '';
    const run = unit.repeat(n);
    if (placement === 'lines') lines.splice(i, 0, ...Array.from({ length: n }, () => unit));
    else if (placement === 'append') lines[i] = line + run;
    else if (placement === 'prepend') lines[i] = run + line;
    else if (placement === 'replace') lines[i] = run;
    else lines[i] = line.slice(0, line.length >> 1) + run + line.slice(line.length >> 1);
    return lines.join('\n');
  };
}

describe('the work of every parse grows linearly with its input', () => {
  beforeAll(installMeter);
  afterAll(() => {
    for (const restore of restored.splice(0).reverse()) restore();
  });

  it('the meter counts a quadratic algorithm as such (the check can fail)', () => {
    const quadratic = (text: string): number =>
      text.split('\n').filter((line, i, all) => all.indexOf(line) === i).length;
    expect(
      growth((n) => Array.from({ length: n }, (_, i) => `l${i}`).join('\n'), quadratic, 200),
    ).toBeGreaterThan(40);
    expect(
      growth(
        (n) => 'x'.repeat(n),
        (text) => text.trim(),
        200,
      ),
    ).toBeLessThanOrEqual(LINEAR_BOUND);
  });

  it.each(PARSERS.map((p) => [p.name, p] as const))('%s: hostile text anywhere', (_name, parser) => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...HOSTILE_UNITS), fc.string({ minLength: 1, maxLength: 3 })),
        fc.constantFrom<Placement>('append', 'prepend', 'middle', 'replace', 'lines'),
        fc.nat(200),
        (unit, placement, at) => {
          const ratio = growth(embed(parser.sample, unit, placement, at), parser.parse, 1000);
          expect(ratio).toBeLessThanOrEqual(LINEAR_BOUND);
        },
      ),
      { numRuns: 25 },
    );
  });

  const blocks =
    (first: string, block: string, last = '') =>
    (n: number) =>
      first + block.repeat(n) + last;
  it.each<[string, (n: number) => string, (text: string) => unknown]>([
    [
      'a 5 MB-style line of blanks in an npu-smi table row',
      embed(NPU_SMI_910B_TABLE, ' ', 'middle', 6),
      tool('npu-smi'),
    ],
    ['blanks after a table header cell', (n) => `| NPU  Name | Health |${' '.repeat(n)}x`, tool('npu-smi')],
    ['the same through nvidia-smi', (n) => `| NPU  Name | Health |${' '.repeat(n)}x`, tool('nvidia-smi')],
    ['an unterminated JSON string padded with blanks', (n) => `{"a": "${' '.repeat(n)}x`, tool('hdc')],
    ['JSON nested n deep and cut', (n) => '['.repeat(n), tool('hdc')],
    ['a -t line of blanks', (n) => `\tHealth Status : OK\n\t${' '.repeat(n)}x`, parseNpuSmiInfo],
    ['many -t keys', blocks('', '\tHBM Single Bit Error Count : 1\n'), parseNpuSmiInfo],
    [
      'kernel events: n "fallen off the bus" lines',
      (n) => 'NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n'.repeat(n),
      parseKernelEvents,
    ],
    [
      'kernel events: n \\x0a escapes in one record',
      (n) => `6,1,1,-;NVRM: ${'\\x0a'.repeat(n)}x`,
      parseKernelEvents,
    ],
    ['kernel events: n bus ids before AER', (n) => `${'0000:3b:00.0 '.repeat(n)}AER: x`, parseKernelEvents],
    ['kernel events: n Slot(', (n) => `pciehp 0000:00:03.0: ${'Slot('.repeat(n)}`, parseKernelEvents],
    [
      'kernel events: n dictionary lines',
      (n) => `6,1,1,-;x\n${' SUBSYSTEM=pci\n'.repeat(n)}`,
      parseKernelEvents,
    ],
    [
      'kernel events: n continuation lines',
      (n) => `[ 1.0] NVRM: a\n${'    NVRM: b\n'.repeat(n)}`,
      parseKernelEvents,
    ],
    [
      'n Xid lines, then n "fallen off the bus" echoes of one GPU',
      (n) =>
        `${'NVRM: Xid (PCI:0000:01:00): 13, pid=1\n'.repeat(n)}${'NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n'.repeat(n)}`,
      parseXidEvents,
    ],
    [
      'a kernel-log line of "a:" pairs',
      (n) => `${'a:'.repeat(n)} 2025-01-01T00:00:00 NVRM: Xid (PCI:0000:01:00): 13`,
      parseXidEvents,
    ],
    [
      'node events: a hung task line with n blanks for its comm',
      (n) => `INFO: task ${' '.repeat(n)}:1 blocked for more than 120 seconds.`,
      parseNodeKernelEvents,
    ],
    [
      'node events: n "(" after an OOM kill',
      (n) => `Out of memory: Killed process 1 ${'('.repeat(n)}`,
      parseNodeKernelEvents,
    ],
    [
      'node events: n filesystem errors',
      (n) => 'EXT4-fs error (device sda1): ext4_find_entry:1455: comm ls: x\n'.repeat(n),
      parseNodeKernelEvents,
    ],
    ['node events: n "XFS (" in one line', (n) => `XFS (sda1): ${'XFS ('.repeat(n)}`, parseNodeKernelEvents],
    ['nvlink: one header of n " (UUID: "', (n) => `GPU 0: ${' (UUID: '.repeat(n)}`, parseNvlinkStatus],
    [
      'nvlink: n link lines of one GPU',
      blocks('GPU 0: A (UUID: GPU-a)\n', '\t Link 1: 25 GB/s\n'),
      parseNvlinkStatus,
    ],
    [
      'nvlink: n GPUs',
      (n) => Array.from({ length: n }, (_, i) => `GPU ${i % 200}: A (UUID: GPU-${i})`).join('\n'),
      parseNvlinkStatus,
    ],
    ['n unterminated XML comments', (n) => `<nvidia_smi_log>${'<!--'.repeat(n)}`, tool('nvidia-smi')],
    ['n open XML elements', (n) => `<nvidia_smi_log>${'<a>'.repeat(n)}`, tool('nvidia-smi')],
    ['one long XML tag', (n) => `<nvidia_smi_log><gpu id="0:1:0.0" ${'a-'.repeat(n)}`, tool('nvidia-smi')],
    [
      'n GPU blocks of -q',
      blocks(
        NVIDIA_Q.split('GPU 00000000:19:00.0')[0] ?? '',
        `GPU 00000000:19:00.0\n    Product Name : x\n    Processes : None\n`,
      ),
      tool('nvidia-smi'),
    ],
    [
      'n GPU rows of the default table',
      blocks(
        NVIDIA_TABLE.split('|   0  NVIDIA')[0] ?? '',
        '|   0  NVIDIA A100          On  |   00000000:27:00.0 Off |    0 |\n| N/A   49C    P0    114W /  400W |   1MiB /  81920MiB |   11%   Default |\n',
      ),
      tool('nvidia-smi'),
    ],
    ['n CSV rows', blocks('index, temperature.gpu, count\n', '0, 41, 1\n'), tool('nvidia-smi')],
    [
      'n CSV columns',
      (n) => `${'index, '.repeat(n)}temperature.gpu\n${'0, '.repeat(n)}41\n`,
      tool('nvidia-smi'),
    ],
    [
      'n NPU rows',
      blocks(
        NPU_SMI_910B_TABLE.split('| 0     910B3')[0] ?? '',
        '| 0     910B3               | OK            | 124.9       41                0    / 0             |\n| 0                         | 0000:C1:00.0  | 27          0    / 0          59718/ 65536         |\n',
      ),
      tool('npu-smi'),
    ],
    [
      'n mapping rows',
      blocks('NPU ID   Chip ID   Chip Logic ID   Chip Name\n', '0 0 0 Ascend 910A\n'),
      parseNpuSmiMapping,
    ],
  ])('%s', (_name, build, parse) => {
    // Whole blocks (GPU rows, NPU rows, Xid lines) are long: 250 of them against 2,000 show a
    // quadratic as plainly as 2,000 blanks against 16,000, at a tenth of the time.
    const probe = build(1).length;
    expect(growth(build, parse, probe > 200 ? 250 : 2000)).toBeLessThanOrEqual(LINEAR_BOUND);
  });
});
