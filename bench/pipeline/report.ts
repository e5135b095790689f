/**
 * The human report of a pipeline benchmark (`bench/results/<timestamp>.md`): every figure of
 * the result file in tables, each target with pass or miss and its margin, saturated runs
 * flagged and never quoted, and links to the CDF charts. Pure: returns the Markdown.
 *
 * Targets (`result.targets`, from the issue; all milliseconds except the ratio):
 * - `collected_to_written_p99_ms_at_1000` (300): collected_to_written p99, at N = 1000 only.
 * - `injected_to_watch_p99_ms` (1500): injected_to_watch p99, every N.
 * - `event_to_watch_p99_ms` (400): event_to_watch p99, every N.
 * - `watch_to_consumer_p99_ms` (200): watch_fanout and watch_to_sse p99, every N.
 * - `baseline_ratio_min` (10): a baseline's p50 over the pipeline's injected_to_watch p50 at
 *   the same N ("p50 at least 10x below the Prometheus/Alertmanager path").
 * A key missing from `result.targets` leaves its check out.
 */
import { PATHS, type BaselineResult, type BenchResult, type PathName, type RunResult } from './result.js';
import { knee } from './summary.js';

export const DEFAULT_TARGETS = {
  collected_to_written_p99_ms_at_1000: 300,
  injected_to_watch_p99_ms: 1500,
  event_to_watch_p99_ms: 400,
  watch_to_consumer_p99_ms: 200,
  baseline_ratio_min: 10,
} as const;
export type TargetKey = keyof typeof DEFAULT_TARGETS;

/** Which target bounds a path's p99, and at which fleet size only (if any). */
export const PATH_TARGETS: Partial<Record<PathName, { key: TargetKey; onlyAtNodes?: number }>> = {
  collected_to_written: { key: 'collected_to_written_p99_ms_at_1000', onlyAtNodes: 1000 },
  injected_to_watch: { key: 'injected_to_watch_p99_ms' },
  event_to_watch: { key: 'event_to_watch_p99_ms' },
  watch_fanout: { key: 'watch_to_consumer_p99_ms' },
  watch_to_sse: { key: 'watch_to_consumer_p99_ms' },
};

const PATH_MEANING: Record<PathName, string> = {
  injected_to_sent: 'fault injected → the snapshot carrying it leaves the agent',
  sent_to_answered: 'snapshot sent → the function answers',
  collected_to_written: 'collected_at → status write acknowledged (leader histogram, failures only)',
  collected_to_watch: 'collected_at → an API watcher sees the device failed',
  injected_to_watch: 'fault injected → an API watcher sees the device failed (end to end)',
  event_to_watch: 'kernel-log event (GPU XID) injected → an API watcher sees the device failed',
  injected_to_sse: 'fault injected → the node agent’s SSE stream carries the failure',
  injected_to_cordon:
    'fault injected → a watcher of Nodes sees the node unschedulable and tainted (remediation in cordon mode; the first fault on each node)',
  watch_to_cordon: 'an API watcher sees the device failed → a watcher of Nodes sees the node cordoned',
  watch_fanout: 'first watcher saw the write → each other watcher saw it',
  watch_to_sse: 'first watcher saw the write → the node’s SSE stream carried it (negative: SSE first)',
};

const SATURATED = 'saturated: not quoted';
const DASH = '—';

/** A table cell: no pipe or line break may escape it. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
const row = (cells: readonly string[]): string => `| ${cells.map(cell).join(' | ')} |`;
function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return [row(header), row(header.map(() => '---')), ...rows.map(row)];
}

const ms = (v: number | null): string => (v === null ? DASH : v.toFixed(1));
const num = (v: number, digits = 0): string => v.toFixed(digits);
/** A saturated run's figure, struck through so nobody quotes it. */
const strike = (text: string, saturated: boolean): string =>
  saturated && text !== DASH ? `~~${text}~~` : text;
const runLabel = (r: RunResult): string => (r.saturated ? `${r.nodes} (${SATURATED})` : String(r.nodes));

function bytesPerSecond(v: number): string {
  const units = ['B/s', 'KiB/s', 'MiB/s', 'GiB/s'];
  let value = v;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

/** pass with the room left, or miss with the overshoot. */
function verdict(value: number, limit: number, unit: string): { pass: boolean; text: string } {
  const margin = Math.round(Math.abs(limit - value) * 10) / 10;
  return value <= limit
    ? { pass: true, text: `pass (${margin} ${unit} spare)` }
    : { pass: false, text: `**miss** by ${margin} ${unit}` };
}

/** Every target check made, for the summary at the top. */
interface Tally {
  pass: number;
  miss: string[];
  /** Checks whose run saturated the machine: neither pass nor miss, and said so. */
  unquoted: string[];
}

function pathSection(
  result: BenchResult,
  runs: readonly RunResult[],
  path: PathName,
  tally: Tally,
): string[] {
  const lines = [`### ${path}`, '', `${PATH_MEANING[path]}.`, ''];
  if (runs.every((r) => r.latency[path].count === 0)) return [...lines, '_No samples at any N._', ''];
  const target = PATH_TARGETS[path];
  const limit = target === undefined ? undefined : result.targets[target.key];
  const rows = runs.map((r) => {
    const s = r.latency[path];
    const figures = [ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max)].map((f) => strike(f, r.saturated));
    const applies =
      limit !== undefined && (target?.onlyAtNodes === undefined || target.onlyAtNodes === r.nodes);
    let targetText = DASH;
    let outcome = DASH;
    if (applies) {
      targetText = `p99 ≤ ${limit}`;
      if (r.saturated) {
        outcome = SATURATED;
        tally.unquoted.push(`${path} p99 at N = ${r.nodes} (saturated: p99 ${ms(s.p99)} ms)`);
      } else if (s.p99 === null) outcome = 'no samples';
      else {
        const v = verdict(s.p99, limit, 'ms');
        outcome = v.text;
        if (v.pass) tally.pass++;
        else tally.miss.push(`${path} p99 at N = ${r.nodes}: ${s.p99} ms > ${limit} ms`);
      }
    }
    return [runLabel(r), strike(String(s.count), r.saturated), ...figures, targetText, outcome];
  });
  const notes: string[] = [];
  if (
    target?.onlyAtNodes !== undefined &&
    limit !== undefined &&
    !runs.some((r) => r.nodes === target.onlyAtNodes)
  )
    notes.push('', `_Target p99 ≤ ${limit} ms applies at N = ${target.onlyAtNodes}, which was not run._`);
  return [
    ...lines,
    ...table(['N', 'count', 'p50 (ms)', 'p95 (ms)', 'p99 (ms)', 'max (ms)', 'target (ms)', 'result'], rows),
    ...notes,
    '',
  ];
}

function componentsSection(runs: readonly RunResult[]): string[] {
  const out = ['## Components', ''];
  for (const r of runs) {
    const rate = r.snapshotsPerSecond;
    out.push(
      `### N = ${runLabel(r)}`,
      '',
      ...(rate === undefined ? [] : [`Snapshots posted: ${num(rate, 0)}/s over the window.`, '']),
    );
    if (r.components.length === 0) {
      out.push('_No components measured._', '');
      continue;
    }
    const rows = r.components.map((c) => [
      c.name,
      strike(num(c.cpuSeconds, 1), r.saturated),
      strike(num(c.cpuShareOfOneCore, 3), r.saturated),
      rate ? strike(num((c.cpuShareOfOneCore * 1e6) / rate, 0), r.saturated) : '—',
      strike(num(c.rssMiBPeak, 1), r.saturated),
      strike(ms(c.eventLoopDelayP99MsMax), r.saturated),
    ]);
    out.push(
      ...table(
        [
          'component',
          'CPU (s)',
          'CPU (share of one core)',
          'CPU per snapshot (µs)',
          'RSS peak (MiB)',
          'event-loop p99 max (ms)',
        ],
        rows,
      ),
      '',
    );
  }
  return out;
}

function apiSection(runs: readonly RunResult[]): string[] {
  const rows = runs.map((r) => [
    runLabel(r),
    strike(num(r.api.statusWritesPerSecond, 2), r.saturated),
    strike(bytesPerSecond(r.api.statusBytesPerSecond), r.saturated),
    strike(num(r.api.allWritesPerSecond, 2), r.saturated),
  ]);
  return [
    '## API writes',
    '',
    ...table(['N', 'status writes/s', 'status bytes/s', 'all writes/s (every client)'], rows),
    '',
  ];
}

function watcherSection(runs: readonly RunResult[]): string[] {
  const rows = runs.flatMap((r) =>
    r.watchers.map((w) => [
      runLabel(r),
      String(w.watchers),
      num(w.seconds),
      strike(bytesPerSecond(w.egressBytesPerSecond), r.saturated),
      strike(
        w.deliveredDocumentBytesPerSecond === undefined
          ? DASH
          : bytesPerSecond(w.deliveredDocumentBytesPerSecond),
        r.saturated,
      ),
      strike(num(w.eventsPerSecond, 1), r.saturated),
      strike(ms(w.fanout.p50), r.saturated),
      strike(ms(w.fanout.p99), r.saturated),
    ]),
  );
  if (rows.length === 0) return ['## Watcher egress', '', '_No watcher load measured._', ''];
  return [
    '## Watcher egress',
    '',
    'What the apiserver sent to watchers of configmaps, per watcher count held: its own metric ' +
      '(apiserver_watch_events_sizes), and the status documents the watchers received (each ' +
      'version’s size times the watchers it reached).',
    '',
    ...table(
      [
        'N',
        'watchers',
        'seconds',
        'apiserver egress',
        'documents received',
        'events/s',
        'fan-out p50 (ms)',
        'fan-out p99 (ms)',
      ],
      rows,
    ),
    '',
  ];
}

function faultSection(runs: readonly RunResult[]): string[] {
  const rows = runs.map((r) => {
    const f = r.faults;
    const problems = [
      f.missed > 0 ? `${f.missed} missed` : '',
      f.falseFailed > 0 ? `${f.falseFailed} false failed` : '',
    ].filter((p) => p !== '');
    return [
      runLabel(r),
      String(f.injected),
      String(f.seenFailed),
      String(f.missed),
      String(f.falseFailed),
      problems.length === 0 ? 'ok' : `**${problems.join(', ')}**`,
    ];
  });
  return [
    '## Faults',
    '',
    'Every injected fault must be seen failed, and no device may be published failed without one.',
    '',
    ...table(['N', 'injected', 'seen failed', 'missed', 'false failed', 'check'], rows),
    '',
  ];
}

function losslessSection(runs: readonly RunResult[]): string[] {
  const rows = runs.map((r) => {
    const l = r.lossless;
    const problems = [
      l.lost > 0 ? `${l.lost} lost` : '',
      l.duplicated > 0 ? `${l.duplicated} duplicated` : '',
    ].filter((p) => p !== '');
    return [
      runLabel(r),
      String(l.published),
      String(l.replayed),
      String(l.lost),
      String(l.duplicated),
      String(l.merged),
      problems.length === 0 ? 'ok' : `**${problems.join(', ')}**`,
    ];
  });
  const details = runs.flatMap((r) =>
    r.lossless.details.length === 0
      ? []
      : ['', `Details at N = ${r.nodes}:`, '', ...r.lossless.details.map((d) => `- ${d}`)],
  );
  return [
    '## Lossless check',
    '',
    'The leader’s recorded observations replayed against the published transitions (merged: shorter than one publish interval, not a loss).',
    '',
    ...table(['N', 'published', 'replayed', 'lost', 'duplicated', 'merged', 'check'], rows),
    ...details,
    '',
  ];
}

/** The fleet size a baseline ran at: its `configuration.nodes` (a number or numeric string). */
export function baselineNodes(b: BaselineResult): number | undefined {
  const configured = Number(b.configuration.nodes);
  return Number.isInteger(configured) && configured > 0 ? configured : undefined;
}

function ratioCell(
  baselineP50: number | null,
  pipelineP50: number | null,
): { ratio: number | null; text: string } {
  if (baselineP50 === null || pipelineP50 === null) return { ratio: null, text: DASH };
  if (pipelineP50 <= 0) return { ratio: Infinity, text: '∞' };
  const ratio = baselineP50 / pipelineP50;
  return { ratio, text: `${ratio.toFixed(1)}×` };
}

function baselineSection(result: BenchResult, runs: readonly RunResult[], tally: Tally): string[] {
  if (result.baselines.length === 0) return ['## Baselines', '', '_No baseline was run._', ''];
  const minRatio = result.targets.baseline_ratio_min;
  const out = ['## Baselines', ''];
  const comparison: string[][] = [];
  for (const b of result.baselines) {
    const nodes = baselineNodes(b);
    out.push(`### ${b.name}`, '');
    const config = Object.entries(b.configuration);
    if (config.length > 0) out.push(...config.map(([k, v]) => `- ${k}: ${v}`), '');
    out.push(
      ...table(
        ['injected', 'seen', 'missed', 'count', 'p50 (ms)', 'p95 (ms)', 'p99 (ms)', 'max (ms)'],
        [
          [b.injected, b.seen, b.missed, b.latency.count]
            .map(String)
            .concat([b.latency.p50, b.latency.p95, b.latency.p99, b.latency.max].map(ms)),
        ],
      ),
      '',
    );
    const findings = Object.entries(b.findings);
    if (findings.length > 0) out.push('Findings:', '', ...findings.map(([k, v]) => `- ${k}: ${v}`), '');
    if (b.sameRun) {
      // The pipeline beside it on the same faults: saturation there slows the pipeline, not
      // the baseline, so the ratio stays quotable as a lower bound.
      const { ratio, text } = ratioCell(b.latency.p50, b.sameRun.pipeline.p50);
      let outcome = DASH;
      if (minRatio !== undefined && ratio !== null) {
        outcome = ratio >= minRatio ? 'pass' : `**miss** (${(minRatio - ratio).toFixed(1)}× short)`;
        if (ratio >= minRatio) tally.pass++;
        else tally.miss.push(`${b.name} vs pipeline in the same run: ${text} < ${minRatio}×`);
      }
      const busy = `${Math.round(b.sameRun.machineBusy * 100)} % busy`;
      comparison.push([
        b.name,
        `${b.sameRun.nodes}, same run (${b.sameRun.saturated ? `saturated, ${busy}: a lower bound` : busy})`,
        ms(b.latency.p50),
        ms(b.sameRun.pipeline.p50),
        text,
        outcome,
      ]);
      continue;
    }
    // Same N when the baseline states it; otherwise every N, said so.
    const peers = nodes === undefined ? runs : runs.filter((r) => r.nodes === nodes);
    if (peers.length === 0)
      comparison.push([b.name, String(nodes), ms(b.latency.p50), 'not run at this N', DASH, DASH]);
    if (b.notComparable !== undefined) {
      comparison.push([
        b.name,
        nodes === undefined ? DASH : String(nodes),
        ms(b.latency.p50),
        DASH,
        DASH,
        b.notComparable,
      ]);
      continue;
    }
    for (const r of peers) {
      const pipelineP50 = r.latency.injected_to_watch.p50;
      const { ratio, text } = ratioCell(b.latency.p50, pipelineP50);
      let outcome = DASH;
      if (r.saturated) outcome = SATURATED;
      else if (minRatio !== undefined && ratio !== null) {
        outcome = ratio >= minRatio ? 'pass' : `**miss** (${(minRatio - ratio).toFixed(1)}× short)`;
        if (ratio >= minRatio) tally.pass++;
        else tally.miss.push(`${b.name} vs pipeline at N = ${r.nodes}: ${text} < ${minRatio}×`);
      }
      comparison.push([
        b.name,
        nodes === undefined ? `${r.nodes} (baseline N not stated)` : runLabel(r),
        ms(b.latency.p50),
        strike(ms(pipelineP50), r.saturated),
        strike(text, r.saturated),
        outcome,
      ]);
    }
  }
  out.push(
    '### Pipeline against baselines',
    '',
    `End to end (fault injected → seen), p50. Target: the pipeline's p50 at least ${minRatio ?? DASH}× below each baseline's.`,
    '',
    ...table(
      ['baseline', 'N', 'baseline p50 (ms)', 'pipeline injected_to_watch p50 (ms)', 'ratio', 'result'],
      comparison,
    ),
    '',
  );
  return out;
}

/**
 * The whole report. `charts` are the chart files written beside it (names relative to the
 * report), linked and embedded in the order given.
 */
export function markdownReport(
  result: BenchResult,
  charts: readonly { file: string; title: string }[],
): string {
  const runs = [...result.runs].sort((a, b) => a.nodes - b.nodes);
  const tally: Tally = { pass: 0, miss: [], unquoted: [] };
  const m = result.machine;
  const paths = PATHS.flatMap((p) => pathSection(result, runs, p, tally));
  const baselines = baselineSection(result, runs, tally);
  const saturated = runs.filter((r) => r.saturated);
  const kneeText = result.knee.trim() === '' ? knee(runs, 'injected_to_watch') : result.knee;
  const lines = [
    '# npu-fault pipeline benchmark',
    '',
    `- Date: ${result.startedAt} → ${result.finishedAt}`,
    `- Machine: ${m.model}, ${m.cpus} CPUs, ${m.memoryGiB} GiB memory, Node ${m.node}`,
    `- Command: \`${result.command.replace(/`/g, "'")}\``,
    `- Fleet sizes: ${runs.map((r) => `N = ${r.nodes} (${r.devices} devices, ${r.measuredSeconds} s, machine ${Math.round(r.machineBusy * 100)} % busy)`).join('; ') || 'none'}`,
    saturated.length === 0
      ? '- Saturation: no run saturated the machine.'
      : `- Saturation: ${saturated.map((r) => `N = ${r.nodes}`).join(', ')} kept the machine over 85 % busy: ${SATURATED} (figures struck through).`,
    `- Targets: ${tally.pass} pass, ${tally.miss.length} miss, ${tally.unquoted.length} not quotable (the run saturated the machine).`,
    ...tally.miss.map((miss) => `  - miss: ${miss}`),
    ...tally.unquoted.map((check) => `  - not quotable: ${check}`),
    ...(result.notes ?? []).map((note) => `- Note: ${note}`),
    '',
    '## Where latency climbs',
    '',
    kneeText,
    '',
    '## Latency per path',
    '',
    'Nearest-rank quantiles over all faults of a run, in milliseconds.',
    '',
    ...paths,
    ...componentsSection(runs),
    ...apiSection(runs),
    ...watcherSection(runs),
    ...faultSection(runs),
    ...losslessSection(runs),
    ...baselines,
    '## Charts',
    '',
  ];
  const links = charts.map((c) => ({ text: c.title.replace(/([[\]\\])/g, '\\$1'), href: encodeURI(c.file) }));
  if (links.length === 0) lines.push('_No charts._', '');
  for (const l of links) lines.push(`- [${l.text}](${l.href})`);
  if (links.length > 0) lines.push('');
  for (const l of links) lines.push(`![${l.text}](${l.href})`, '');
  return `${lines.join('\n').trimEnd()}\n`;
}
