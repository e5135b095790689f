import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { configFields, fromText, fromTexts, kebab, type ConfigField } from './config-schema.js';

describe('configFields', () => {
  const schema = z.object({
    listen: z.string().default(':8080').describe('address of the ingest endpoint'),
    metricsURL: z.string().optional(),
    lease: z
      .object({
        durationSeconds: z.number().int().positive().default(15),
        renewDeadlineSeconds: z.number().default(10),
      })
      .prefault({}),
    dryRun: z.boolean().default(false),
    namespaces: z.array(z.string()).default([]),
    ports: z.array(z.number()).default([]),
    mode: z.enum(['watch', 'poll']).default('watch'),
    replicas: z.union([z.number(), z.literal('auto')]).default('auto'),
    labels: z.record(z.string(), z.string()).default({}),
    threshold_c: z.number().default(85),
    trimmed: z
      .string()
      .transform((s) => s.trim())
      .default(''),
  });

  it('lists every leaf with its flag and variable names, kind, default and description', () => {
    const fields = configFields(schema, 'NPU_FAULT_');
    const row = (f: ConfigField): unknown[] => [f.name, f.flag, f.env, f.kind];
    expect(fields.map(row)).toEqual([
      ['listen', 'listen', 'NPU_FAULT_LISTEN', 'string'],
      ['metricsURL', 'metrics-url', 'NPU_FAULT_METRICS_URL', 'string'],
      ['lease.durationSeconds', 'lease-duration-seconds', 'NPU_FAULT_LEASE_DURATION_SECONDS', 'number'],
      [
        'lease.renewDeadlineSeconds',
        'lease-renew-deadline-seconds',
        'NPU_FAULT_LEASE_RENEW_DEADLINE_SECONDS',
        'number',
      ],
      ['dryRun', 'dry-run', 'NPU_FAULT_DRY_RUN', 'boolean'],
      ['namespaces', 'namespaces', 'NPU_FAULT_NAMESPACES', 'list'],
      ['ports', 'ports', 'NPU_FAULT_PORTS', 'list'],
      ['mode', 'mode', 'NPU_FAULT_MODE', 'string'],
      ['replicas', 'replicas', 'NPU_FAULT_REPLICAS', 'union'],
      ['labels', 'labels', 'NPU_FAULT_LABELS', 'json'],
      ['threshold_c', 'threshold-c', 'NPU_FAULT_THRESHOLD_C', 'number'],
      ['trimmed', 'trimmed', 'NPU_FAULT_TRIMMED', 'string'],
    ]);
    expect(fields[0]).toMatchObject({ description: 'address of the ingest endpoint', defaultValue: ':8080' });
    expect(fields.find((f) => f.name === 'ports')?.itemKind).toBe('number');
    expect(fields.find((f) => f.name === 'replicas')?.unionKinds).toEqual(['number', 'string']);
    expect(fields.find((f) => f.name === 'metricsURL')).not.toHaveProperty('defaultValue');
  });

  it('refuses a schema whose fields would share a flag', () => {
    const clash = z.object({ leaseDuration: z.number(), lease: z.object({ duration: z.number() }) });
    expect(() => configFields(clash, 'X_')).toThrow(
      'config schema: fields leaseDuration and lease.duration both map to --lease-duration',
    );
  });

  it('refuses a root that is not an object', () => {
    expect(() => configFields(z.string(), 'X_')).toThrow('config schema: the root must be a zod object');
  });
});

describe('kebab', () => {
  it.each([
    ['durationSeconds', 'duration-seconds'],
    ['metricsURL', 'metrics-url'],
    ['URLPath', 'url-path'],
    ['threshold_c', 'threshold-c'],
    ['ipv6Enabled', 'ipv6-enabled'],
    ['listen', 'listen'],
  ])('%s → %s', (key, flag) => {
    expect(kebab(key)).toBe(flag);
  });
});

describe('fromText', () => {
  it.each([
    ['15', 15],
    ['-0.5', -0.5],
    [' 1e3 ', 1000],
    ['.5', 0.5],
  ])('reads the number %p', (text, value) => {
    expect(fromText(text, { kind: 'number' })).toEqual({ ok: true, value });
  });

  it.each(['', 'abc', '0x10', '1_000', 'Infinity', '15s'])('refuses %p as a number', (text) => {
    expect(fromText(text, { kind: 'number' })).toEqual({ ok: false, error: 'expected a number' });
  });

  it.each([
    ['true', true],
    ['FALSE', false],
    ['1', true],
    ['0', false],
    ['yes', true],
    ['Off', false],
  ])('reads the boolean %p', (text, value) => {
    expect(fromText(text, { kind: 'boolean' })).toEqual({ ok: true, value });
  });

  it.each(['', 'y', 'enabled'])('refuses %p as a boolean', (text) => {
    expect(fromText(text, { kind: 'boolean' })).toEqual({ ok: false, error: 'expected true or false' });
  });

  it('reads lists as comma-separated items of their kind, or as one JSON array', () => {
    expect(fromText('a, b ,c', { kind: 'list', itemKind: 'string' })).toEqual({
      ok: true,
      value: ['a', 'b', 'c'],
    });
    expect(fromText('1,2', { kind: 'list', itemKind: 'number' })).toEqual({ ok: true, value: [1, 2] });
    expect(fromText('  ', { kind: 'list', itemKind: 'string' })).toEqual({ ok: true, value: [] });
    expect(fromText('["a,b", "c"]', { kind: 'list', itemKind: 'string' })).toEqual({
      ok: true,
      value: ['a,b', 'c'],
    });
    expect(fromText('1,x', { kind: 'list', itemKind: 'number' })).toEqual({
      ok: false,
      error: 'item 2: expected a number',
    });
    expect(fromText('[1,', { kind: 'list', itemKind: 'number' })).toEqual({
      ok: false,
      error: 'expected JSON',
    });
  });

  it('reads repeated flags as one list, each occurrence itself comma-separated', () => {
    expect(fromTexts(['a,b', 'c'], 'string')).toEqual({ ok: true, value: ['a', 'b', 'c'] });
    expect(fromTexts(['1', 'two'], 'number')).toEqual({ ok: false, error: 'item 1: expected a number' });
  });

  it('reads a union as a number or boolean when its members allow, else as text', () => {
    const replicas = { kind: 'union', unionKinds: ['number', 'string'] } as const;
    expect(fromText('3', replicas)).toEqual({ ok: true, value: 3 });
    expect(fromText('auto', replicas)).toEqual({ ok: true, value: 'auto' });
    expect(fromText('x', { kind: 'union', unionKinds: ['number', 'boolean'] })).toEqual({
      ok: false,
      error: 'expected a number',
    });
  });

  it('reads structured fields as JSON and keeps text as it is', () => {
    expect(fromText('{"zone":"a"}', { kind: 'json' })).toEqual({ ok: true, value: { zone: 'a' } });
    expect(fromText('zone=a', { kind: 'json' })).toEqual({ ok: false, error: 'expected JSON' });
    expect(fromText(' spaced ', { kind: 'string' })).toEqual({ ok: true, value: ' spaced ' });
  });
});
