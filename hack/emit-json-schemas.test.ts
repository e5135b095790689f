import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { DEFAULT_RULES } from '../contracts/index.js';
import { createEngine } from '../core/engine/index.js';
import { demoScenario, generateTrace, playScenario } from '../core/sim/index.js';
import { readExampleJson } from '../test/fixtures.js';
import { renderSchemas, SCHEMA_BASE_URL, SCHEMA_DIR, SCHEMAS } from './emit-json-schemas.js';

type Schema = Record<string, unknown>;
const root = new URL('..', import.meta.url);
const committed = (file: string): string => readFileSync(new URL(`${SCHEMA_DIR}/${file}`, root), 'utf8');
const schema = (file: string): Schema => JSON.parse(committed(file)) as Schema;
const fixture = (name: string): Record<string, unknown> => readExampleJson(name) as Record<string, unknown>;

// The keywords the validator below understands, and the annotations it may ignore. The
// schemas are checked to use nothing else, so a keyword zod starts emitting cannot be
// skipped silently.
const CHECKED = [
  'type',
  'const',
  'enum',
  'required',
  'properties',
  'additionalProperties',
  'propertyNames',
  'items',
  'anyOf',
  'oneOf',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'minLength',
  'maxLength',
  'pattern',
  'maxItems',
];
const ANNOTATIONS = ['$schema', '$id', 'title', 'description', 'default', 'format'];

const typeOf = (v: unknown): string =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'array'
      : typeof v === 'number' && Number.isInteger(v)
        ? 'integer'
        : typeof v;

function keywordsOf(s: unknown, out = new Set<string>()): Set<string> {
  if (typeof s !== 'object' || s === null) return out;
  for (const [k, v] of Object.entries(s)) {
    out.add(k);
    if (k === 'properties') Object.values(v as object).forEach((p) => keywordsOf(p, out));
    else if (k === 'anyOf' || k === 'oneOf') (v as unknown[]).forEach((p) => keywordsOf(p, out));
    else if (k === 'items' || k === 'additionalProperties' || k === 'propertyNames') keywordsOf(v, out);
  }
  return out;
}

/** A small JSON Schema (2020-12 subset) validator: returns the paths that fail, with why. */
function validate(s: Schema, v: unknown, path = '$'): string[] {
  const errs: string[] = [];
  const t = s.type as string | string[] | undefined;
  if (t !== undefined) {
    const types = Array.isArray(t) ? t : [t];
    const actual = typeOf(v);
    if (!types.includes(actual) && !(actual === 'integer' && types.includes('number')))
      return [`${path}: ${actual} is not ${types.join('|')}`];
  }
  if ('const' in s && v !== s.const) errs.push(`${path}: not ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.includes(v)) errs.push(`${path}: not one of ${s.enum.join(', ')}`);
  if (typeof v === 'number') {
    if (typeof s.minimum === 'number' && v < s.minimum) errs.push(`${path}: below ${s.minimum}`);
    if (typeof s.maximum === 'number' && v > s.maximum) errs.push(`${path}: above ${s.maximum}`);
    if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum)
      errs.push(`${path}: not above ${s.exclusiveMinimum}`);
  }
  if (typeof v === 'string') {
    if (typeof s.minLength === 'number' && v.length < s.minLength)
      errs.push(`${path}: shorter than ${s.minLength}`);
    if (typeof s.maxLength === 'number' && v.length > s.maxLength)
      errs.push(`${path}: longer than ${s.maxLength}`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(v))
      errs.push(`${path}: does not match ${s.pattern}`);
  }
  if (Array.isArray(v)) {
    if (typeof s.maxItems === 'number' && v.length > s.maxItems)
      errs.push(`${path}: more than ${s.maxItems} items`);
    if (s.items) v.forEach((x, i) => errs.push(...validate(s.items as Schema, x, `${path}[${i}]`)));
  }
  if (typeOf(v) === 'object') errs.push(...validateObject(s, v as Record<string, unknown>, path));
  for (const k of ['anyOf', 'oneOf'] as const) {
    const options = s[k] as Schema[] | undefined;
    if (!options) continue;
    const passing = options.filter((o) => validate(o, v, path).length === 0).length;
    if (passing === 0 || (k === 'oneOf' && passing > 1)) errs.push(`${path}: matches ${passing} of ${k}`);
  }
  return errs;
}

function validateObject(s: Schema, o: Record<string, unknown>, path: string): string[] {
  const errs: string[] = [];
  const props = (s.properties ?? {}) as Record<string, Schema>;
  for (const r of (s.required ?? []) as string[]) if (!(r in o)) errs.push(`${path}.${r}: required`);
  for (const [k, x] of Object.entries(o)) {
    if (props[k]) errs.push(...validate(props[k], x, `${path}.${k}`));
    else if (s.additionalProperties === false) errs.push(`${path}.${k}: not allowed`);
    else if (typeof s.additionalProperties === 'object')
      errs.push(...validate(s.additionalProperties as Schema, x, `${path}.${k}`));
    if (s.propertyNames) errs.push(...validate(s.propertyNames as Schema, k, `${path}{${k}}`));
  }
  return errs;
}

describe('JSON Schemas in contracts/json-schema', () => {
  it.each(SCHEMAS.map((s) => s.file))(
    '%s is what `npm run schemas` generates now (run it after changing a contract)',
    (file) => {
      expect(committed(file)).toBe(renderSchemas().get(file));
    },
  );

  it.each(SCHEMAS.map((s) => [s.file, s.title] as const))(
    '%s names its $id, title and draft',
    (file, title) => {
      const s = schema(file);
      expect(s.$id).toBe(`${SCHEMA_BASE_URL}${file}`);
      expect(s.title).toBe(title);
      expect(s.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(Object.keys(s).slice(0, 3)).toEqual(['$schema', '$id', 'title']);
    },
  );

  it.each(SCHEMAS.map((s) => s.file))('%s uses only keywords this test understands', (file) => {
    const unknown = [...keywordsOf(schema(file))].filter(
      (k) => !CHECKED.includes(k) && !ANNOTATIONS.includes(k),
    );
    expect(unknown).toEqual([]);
  });
});

describe('snapshot.schema.json against real documents', () => {
  const snapshotJson = schema('snapshot.schema.json');

  it('lists the envelope fields a snapshot must carry', () => {
    expect(snapshotJson.required).toEqual(['schema', 'node', 'seq', 'collected_at', 'collector', 'payload']);
  });

  it.each(['snapshot-910b.json', 'snapshot-310p.json', 'snapshot-nvidia.json'])(
    'accepts the example fixture %s',
    (name) => {
      expect(validate(snapshotJson, fixture(name))).toEqual([]);
    },
  );

  it('accepts what the simulator sends, for every family', () => {
    const { snapshots } = generateTrace({ nodes: 3, seconds: 2 });
    for (const s of snapshots) expect(validate(snapshotJson, JSON.parse(JSON.stringify(s)))).toEqual([]);
  });

  it('rejects a fixture missing a required field, or with a wrong family, naming the path', () => {
    const { seq: _seq, ...noSeq } = fixture('snapshot-910b.json');
    expect(validate(snapshotJson, noSeq)).toEqual(['$.seq: required']);
    const bad = fixture('snapshot-nvidia.json');
    const payload = bad.payload as { gpus: Array<Record<string, unknown>> };
    delete payload.gpus[2]!.index;
    expect(validate(snapshotJson, bad)).toEqual(['$.payload: matches 0 of oneOf']);
    expect(
      validate((((snapshotJson.properties as Schema).payload as Schema).oneOf as Schema[])[2]!, bad.payload),
    ).toContain('$.gpus[2].index: required');
  });
});

describe('rules.schema.json', () => {
  const rulesJson = schema('rules.schema.json');
  it('accepts an empty rules file and the defaults written out, and rejects a misspelt key', () => {
    expect(validate(rulesJson, {})).toEqual([]);
    expect(validate(rulesJson, JSON.parse(JSON.stringify(DEFAULT_RULES)))).toEqual([]);
    expect(validate(rulesJson, { window_sample: 5 })).toEqual(['$.window_sample: not allowed']);
  });
});

describe('published.schema.json', () => {
  it("accepts the engine's document after the demo scenario, and rejects one without cluster_summary", () => {
    const scenario = demoScenario();
    const engine = createEngine();
    let now = scenario.start;
    for (const step of playScenario(engine, scenario)) now = step.now;
    const document = JSON.parse(
      JSON.stringify(engine.document(now, { identity: 'test', term: 3 })),
    ) as Record<string, unknown>;
    expect(Object.keys(document.nodes as object)).toHaveLength(4);
    const publishedJson = schema('published.schema.json');
    expect(validate(publishedJson, document)).toEqual([]);
    const { cluster_summary: _summary, ...broken } = document;
    expect(validate(publishedJson, broken)).toEqual(['$.cluster_summary: required']);
  });
});
