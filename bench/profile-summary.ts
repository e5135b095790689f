/**
 * `node --import tsx bench/profile-summary.ts <file.cpuprofile>… [--top 30] [--from ISO --to ISO]`:
 * where a V8 CPU profile's time went, as text: the share of samples by where the code lives
 * (our folders, each dependency, Node's internals, GC, idle), then the functions with the
 * most self time. `--from`/`--to` keep the samples of a window only (a pipeline run's
 * `window` in its results JSON), placed by the start time in the file's name
 * (`CPU.<yyyymmdd>.<hhmmss>.<pid>…`, local time), so to about a second. For the profiles
 * `npm run bench -- pipeline --profile DIR` writes. Not part of the suite.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: `ours:<folder>`, `dep:<package>`, `node:<module>`, or V8's own. */
export function placeOf(url: string, name: string): string {
  if (url === '') return name === '' ? '(anonymous)' : name; // (garbage collector), (idle), (program)
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return `dep:${dependency[1]}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  const ours =
    /\/(?:dist\/)?(agent|bench|cli|consumer|contracts|controller|core|families|functions|platform|stack)\/([^/]+)/.exec(
      url,
    );
  if (ours) return `ours:${ours[1]}/${ours[2]!.replace(/\.(js|ts)$/, '')}`;
  return url;
}

/** A stage of a component's work, and the frames (`<function> <place>`) that belong to it. */
type Stages = readonly (readonly [stage: string, frames: RegExp])[];

const API_CLIENT = /dep:undici|dep:@kubernetes\/client-node|node:internal\/http2|node:internal\/webstreams/;
const BODY =
  /^parse dep:body-parser|dep:raw-body|dep:iconv-lite|^read dep:body-parser|ours:platform\/json-request-body/;

/**
 * The stages of the issue's breakdown. A sample belongs to the innermost frame on its stack
 * that matches one (a builtin such as JSON.parse counts for its caller); none: `http and
 * framework` (node:http, express, streams, timers), or V8's own (GC, program).
 */
export const STAGES: Readonly<Record<'function' | 'controller', Stages>> = {
  function: [
    ['auth (cache, reviews)', /ours:platform\/k8s|dep:jose|node:internal\/crypto|dep:lru-cache/],
    ['parse (body read, JSON.parse)', BODY],
    [
      'validate',
      /ours:functions\/app\/validate|ours:functions\/app\/node-binding|ours:contracts|mayHoldPollutingKey|^validate ours:functions\/app|^refuse/,
    ],
    [
      'forward (serialise, batch, hop, answer)',
      /ours:functions\/forwarder|^serialise ours:functions|^answerOf/,
    ],
    ['kube API client (TokenReview)', API_CLIENT],
    ['metrics', /dep:prom-client/],
  ],
  controller: [
    ['parse (body read, JSON.parse)', BODY],
    ['validate', /ours:controller\/observations\/validate|ours:contracts|mayHoldPollutingKey/],
    ['render (document, entries)', /^render|^document ours:core\/engine|^nodeEntry|^entry/],
    ['engine', /ours:core\/engine|ours:core\/normalise|ours:families|ours:core\/rules/],
    [
      'accept (host, journal line)',
      /ours:controller\/engine-host|ours:controller\/journal|^answer ours:controller/,
    ],
    [
      'write (status, mirrors, Node status, Events)',
      /ours:controller\/publisher|ours:controller\/node-status|ours:controller\/leader/,
    ],
    ['kube API client (writes, watches, Lease)', API_CLIENT],
    ['watches', /ours:platform\/k8s\/watch|ours:controller\/watch|ours:controller\/node-sync/],
    ['metrics', /dep:prom-client|^census/],
  ],
};

/** When the profile began (epoch ms), from its file name; undefined when the name does not say. */
export function profileStart(file: string): number | undefined {
  const m = /CPU\.(\d{4})(\d{2})(\d{2})\.(\d{2})(\d{2})(\d{2})\./.exec(file);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, se] = m.map(Number) as number[];
  return new Date(y!, mo! - 1, d!, h!, mi!, se!).getTime();
}

/**
 * Self time (µs) per place and per function of one profile; with `window` (epoch ms, and the
 * profile's start), only the samples inside it.
 */
export function summarise(
  profile: CpuProfile,
  window?: { start: number; from: number; to: number },
  stages?: Stages,
): {
  totalUs: number;
  byPlace: Map<string, number>;
  byFunction: Map<string, number>;
  byStage: Map<string, number>;
} {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const stageOf = new Map<number, string | undefined>();
  const classify = (id: number): string | undefined => {
    if (stageOf.has(id)) return stageOf.get(id);
    const frame = nodes.get(id)?.callFrame;
    const label = frame ? `${frame.functionName} ${placeOf(frame.url, frame.functionName)}` : '';
    const own = stages?.find(([, frames]) => frames.test(label))?.[0];
    const parent = parents.get(id);
    const stage = own ?? (parent === undefined ? undefined : classify(parent));
    stageOf.set(id, stage);
    return stage;
  };
  const byPlace = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const byStage = new Map<string, number>();
  let totalUs = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window) {
      const wall = window.start + (at - profile.startTime) / 1000;
      if (wall < window.from || wall > window.to) return;
    }
    const frame = nodes.get(id)?.callFrame;
    if (!frame) return;
    totalUs += delta;
    const place = placeOf(frame.url, frame.functionName);
    byPlace.set(place, (byPlace.get(place) ?? 0) + delta);
    const fn = `${frame.functionName || '(anonymous)'} ${place}:${frame.lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + delta);
    const stage =
      frame.url === '' && /^\((idle|garbage collector|program)\)$/.test(frame.functionName)
        ? frame.functionName
        : (classify(id) ?? 'http and framework (node:http, express, streams, timers)');
    byStage.set(stage, (byStage.get(stage) ?? 0) + delta);
  });
  return { totalUs, byPlace, byFunction, byStage };
}

function top(map: Map<string, number>, n: number, total: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([key, us]) =>
        `${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1e6).toFixed(2).padStart(7)} s  ${key}`,
    );
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      stages: { type: 'string' },
      snapshots: { type: 'string' },
    },
  });
  const n = Number(values.top ?? 30);
  if (positionals.length === 0) {
    process.stderr.write('usage: bench/profile-summary.ts <file.cpuprofile>… [--top 30]\n');
    process.exit(2);
  }
  for (const file of positionals) {
    const start = profileStart(file);
    const window =
      values.from && values.to && start !== undefined
        ? { start, from: Date.parse(values.from), to: Date.parse(values.to) }
        : undefined;
    if ((values.from || values.to) && !window)
      throw new Error(`${file}: --from and --to need both, and a CPU.<date>.<time> name`);
    const kind = values.stages as keyof typeof STAGES | undefined;
    if (kind !== undefined && !(kind in STAGES))
      throw new Error(`--stages: function or controller, got ${kind}`);
    const { totalUs, byPlace, byFunction, byStage } = summarise(
      JSON.parse(readFileSync(file, 'utf8')) as CpuProfile,
      window,
      kind ? STAGES[kind] : undefined,
    );
    // µs of CPU per snapshot: the window's snapshots (`--snapshots`, the rate times its seconds).
    const snapshots = Number(values.snapshots ?? 0);
    if (kind) {
      const busy = totalUs - (byStage.get('(idle)') ?? 0);
      process.stdout.write(`\n# ${file}: stages (${(busy / 1e6).toFixed(2)} s busy)\n`);
      for (const [stage, us] of [...byStage.entries()].sort((a, b) => b[1] - a[1])) {
        if (stage === '(idle)') continue;
        const per = snapshots > 0 ? `${(us / snapshots).toFixed(1)} µs/snapshot` : '';
        process.stdout.write(`| ${stage} | ${((100 * us) / busy).toFixed(1)} % | ${per} |\n`);
      }
      if (snapshots > 0)
        process.stdout.write(`| total | 100 % | ${(busy / snapshots).toFixed(1)} µs/snapshot |\n`);
      continue;
    }
    const idle = byPlace.get('(idle)') ?? 0;
    process.stdout.write(
      `\n# ${file}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${((totalUs - idle) / 1e6).toFixed(1)} s busy\n` +
        `## by place\n${top(byPlace, n, totalUs).join('\n')}\n## by function (self)\n${top(byFunction, n, totalUs).join('\n')}\n`,
    );
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '')) main();
