import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  ConfigError,
  configFlagOptions,
  configFlags,
  describeConfig,
  loadConfig,
  type LoadConfigOptions,
} from './config.js';
import { logLevelSchema } from './logger.js';

const schema = z
  .object({
    listen: z.string().default(':8080').describe('ingest endpoint'),
    metricsListen: z.string().default(':9090'),
    logLevel: logLevelSchema.default('info'),
    dryRun: z.boolean().default(false),
    namespaces: z.array(z.string()).default([]),
    ports: z.array(z.number().int()).default([]),
    lease: z.object({
      name: z.string().default('npu-fault-controller'),
      durationSeconds: z.number().int().positive().default(15),
      renewDeadlineSeconds: z.number().int().positive().default(10),
    }),
    nodeSelector: z.record(z.string(), z.string()).default({}),
  })
  .superRefine((config, ctx) => {
    if (config.lease.renewDeadlineSeconds >= config.lease.durationSeconds) {
      ctx.addIssue({
        code: 'custom',
        path: ['lease', 'renewDeadlineSeconds'],
        message: 'must be shorter than lease.durationSeconds',
      });
    }
  });

const DEFAULTS = {
  listen: ':8080',
  metricsListen: ':9090',
  logLevel: 'info',
  dryRun: false,
  namespaces: [],
  ports: [],
  lease: { name: 'npu-fault-controller', durationSeconds: 15, renewDeadlineSeconds: 10 },
  nodeSelector: {},
};

/** The ConfigError lines of a load that must fail. */
function problems(options: LoadConfigOptions, config: z.ZodType = schema): string[] {
  try {
    loadConfig(config, options);
  } catch (error) {
    if (error instanceof ConfigError) {
      expect(error.message).toBe(error.lines.join('\n'));
      return [...error.lines];
    }
    throw error;
  }
  throw new Error('loadConfig succeeded');
}

describe('loadConfig', () => {
  it('gives the schema defaults when nothing is set', () => {
    expect(loadConfig(schema)).toEqual(DEFAULTS);
  });

  it('returns a deeply frozen value', () => {
    const config = loadConfig(schema, { env: { NPU_FAULT_NAMESPACES: 'a' } });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.lease)).toBe(true);
    expect(Object.isFrozen(config.namespaces)).toBe(true);
    expect(() => {
      (config.lease as { durationSeconds: number }).durationSeconds = 1;
    }).toThrow(TypeError);
  });

  it('takes flags over environment over file over defaults, field by field', () => {
    const file = {
      path: 'controller.yaml',
      text: 'lease:\n  durationSeconds: 20\n  name: from-file\nlisten: ":1"\n',
    };
    const env = { NPU_FAULT_LEASE_DURATION_SECONDS: '30', NPU_FAULT_LISTEN: ':2' };
    const flags = { 'lease-duration-seconds': '40' };
    expect(loadConfig(schema, { file, env, flags }).lease).toEqual({
      name: 'from-file',
      durationSeconds: 40,
      renewDeadlineSeconds: 10,
    });
    expect(loadConfig(schema, { file, env }).lease.durationSeconds).toBe(30);
    expect(loadConfig(schema, { file, env }).listen).toBe(':2');
    expect(loadConfig(schema, { file }).lease.durationSeconds).toBe(20);
  });

  it('reads environment variables by field path, coerced to each field type', () => {
    const config = loadConfig(schema, {
      env: {
        NPU_FAULT_METRICS_LISTEN: '127.0.0.1:9100',
        NPU_FAULT_LOG_LEVEL: 'debug',
        NPU_FAULT_DRY_RUN: 'yes',
        NPU_FAULT_NAMESPACES: 'team-a, team-b',
        NPU_FAULT_PORTS: '[80, 443]',
        NPU_FAULT_LEASE_RENEW_DEADLINE_SECONDS: '5',
        NPU_FAULT_NODE_SELECTOR: '{"accelerator":"ascend-910b"}',
        NPU_FAULT_CACHE: '/tmp/cache', // the shared prefix: not a field, not an error
        LISTEN: ':1', // no prefix: ignored
      },
    });
    expect(config).toEqual({
      ...DEFAULTS,
      metricsListen: '127.0.0.1:9100',
      logLevel: 'debug',
      dryRun: true,
      namespaces: ['team-a', 'team-b'],
      ports: [80, 443],
      lease: { ...DEFAULTS.lease, renewDeadlineSeconds: 5 },
      nodeSelector: { accelerator: 'ascend-910b' },
    });
  });

  it('uses another prefix when told', () => {
    const env = { AGENT_LISTEN: ':7', NPU_FAULT_LISTEN: ':8' };
    expect(loadConfig(schema, { env, envPrefix: 'AGENT_' }).listen).toBe(':7');
  });

  it('reads a JSON file and a file by path', () => {
    const json = { path: 'c.json', text: '{"lease": {"name": "json"}, "namespaces": ["a"]}' };
    expect(loadConfig(schema, { file: json })).toMatchObject({ lease: { name: 'json' }, namespaces: ['a'] });
    const dir = mkdtempSync(join(tmpdir(), 'npu-fault-config-'));
    try {
      const path = join(dir, 'agent.yaml');
      writeFileSync(path, 'dryRun: true\n');
      expect(loadConfig(schema, { file: path }).dryRun).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports every problem at once, one line each, naming where each value came from', () => {
    const file = {
      path: 'controller.yaml',
      text: [
        'listen: ":8080"',
        'lease:',
        '  name: 42',
        '  durationSeconds: 15',
        '  duration: 15',
        'extra: true',
        '',
      ].join('\n'),
    };
    expect(
      problems({
        file,
        env: {
          NPU_FAULT_LEASE_DURATION_SECONDS: 'fifteen',
          NPU_FAULT_PORTS: '80,x',
          NPU_FAULT_LOG_LEVEL: 'verbose',
        },
        flags: { 'lease-renew-deadline-seconds': '-3', bogus: 'x', ports: ['1.5'] },
      }),
    ).toEqual([
      'controller.yaml:5: lease.duration: unknown field',
      'controller.yaml:6: extra: unknown field',
      // sources are read in order (environment, then flags) and each bad value is named,
      'NPU_FAULT_PORTS: item 2: expected a number',
      'NPU_FAULT_LEASE_DURATION_SECONDS: expected a number',
      '--bogus: unknown flag',
      // then the schema's findings, in field order
      'NPU_FAULT_LOG_LEVEL: Invalid option: expected one of "trace"|"debug"|"info"|"warn"|"error"|"fatal"|"silent"',
      '--ports[0]: Invalid input: expected int, received number',
      'controller.yaml:3: lease.name: Invalid input: expected string, received number',
      '--lease-renew-deadline-seconds: Too small: expected number to be >0',
    ]);
  });

  it('reports a cross-field rule at the field it names, with its source', () => {
    expect(problems({ flags: { 'lease-renew-deadline-seconds': '20' } })).toEqual([
      '--lease-renew-deadline-seconds: must be shorter than lease.durationSeconds',
    ]);
    expect(problems({ file: { path: 'c.yaml', text: 'lease:\n  durationSeconds: 5\n' } })).toEqual([
      'lease.renewDeadlineSeconds: must be shorter than lease.durationSeconds (set --lease-renew-deadline-seconds, NPU_FAULT_LEASE_RENEW_DEADLINE_SECONDS or lease.renewDeadlineSeconds in the file)',
    ]);
  });

  it('says how to set a required field that nothing set', () => {
    const required = z.object({ node: z.object({ name: z.string() }) });
    expect(problems({}, required)).toEqual([
      'node.name: Invalid input: expected string, received undefined (set --node-name, NPU_FAULT_NODE_NAME or node.name in the file)',
    ]);
    expect(loadConfig(required, { env: { NPU_FAULT_NODE_NAME: 'atlas-1' } }).node.name).toBe('atlas-1');
  });

  it('leaves a group that is optional or has its own default to zod', () => {
    const groups = z.object({
      tls: z.object({ certFile: z.string() }).optional(),
      retry: z.object({ attempts: z.number().default(3) }).default({ attempts: 5 }),
      deep: z.object({ inner: z.object({ value: z.number().default(1) }) }),
    });
    expect(loadConfig(groups)).toEqual({ retry: { attempts: 5 }, deep: { inner: { value: 1 } } });
    expect(loadConfig(groups, { env: { NPU_FAULT_TLS_CERT_FILE: '/c' } }).tls).toEqual({ certFile: '/c' });
  });

  it('names the item of a list that fails, below its source', () => {
    expect(problems({ env: { NPU_FAULT_PORTS: '80,1.5' } })).toEqual([
      'NPU_FAULT_PORTS[1]: Invalid input: expected int, received number',
    ]);
    expect(problems({ file: { path: 'c.yaml', text: 'ports:\n  - 80\n  - 1.5\n' } })).toEqual([
      'c.yaml:3: ports[1]: Invalid input: expected int, received number',
    ]);
  });

  it('stops at a file it cannot read or parse, still reporting the other sources', () => {
    expect(problems({ file: '/nonexistent/npu-fault.yaml', env: { NPU_FAULT_DRY_RUN: 'maybe' } })).toEqual([
      '/nonexistent/npu-fault.yaml: cannot read (ENOENT)',
      'NPU_FAULT_DRY_RUN: expected true or false',
    ]);
    expect(problems({ file: { path: 'c.yaml', text: 'lease:\n  __proto__: {}\n' } })).toEqual([
      'c.yaml:2: __proto__: refused (a prototype-pollution key)',
    ]);
  });

  it('reports a bad environment value even when a flag overrides it, and only that', () => {
    // Every source must be valid: the bad value would surface the day the flag is dropped.
    expect(problems({ env: { NPU_FAULT_DRY_RUN: 'maybe' }, flags: { 'dry-run': true } })).toEqual([
      'NPU_FAULT_DRY_RUN: expected true or false',
    ]);
  });

  it('refuses a value-less flag for a field that needs a value, and repeats of a single-value flag', () => {
    expect(problems({ flags: { listen: true, 'metrics-listen': [':1', ':2'] } })).toEqual([
      '--listen: expects a value',
      '--metrics-listen: given more than once',
    ]);
  });

  it('allows extra file keys only where the schema does (loose objects)', () => {
    const loose = z.object({ labels: z.looseObject({ team: z.string().optional() }) });
    expect(
      loadConfig(loose, { file: { path: 'c.yaml', text: 'labels:\n  team: a\n  zone: b\n' } }).labels,
    ).toEqual({
      team: 'a',
      zone: 'b',
    });
  });
});

describe('parseArgs integration', () => {
  it('declares every field as a flag, and loads what parseArgs returns', () => {
    const options = configFlagOptions(schema);
    expect(options['lease-duration-seconds']).toEqual({ type: 'string' });
    expect(options['dry-run']).toEqual({ type: 'boolean' });
    expect(options.namespaces).toEqual({ type: 'string', multiple: true });
    const parsed = parseArgs({
      args: [
        '--lease-duration-seconds',
        '40',
        '--no-dry-run',
        '--namespaces',
        'a,b',
        '--namespaces=c',
        '--config',
        'x.yaml',
      ],
      options: { ...options, config: { type: 'string' } },
      allowNegative: true,
    });
    const { config: file, ...values } = parsed.values;
    expect(file).toBe('x.yaml');
    const config = loadConfig(schema, { flags: configFlags({ values }), env: { NPU_FAULT_DRY_RUN: 'true' } });
    expect(config).toMatchObject({
      dryRun: false,
      namespaces: ['a', 'b', 'c'],
      lease: { durationSeconds: 40 },
    });
  });

  it('configFlags drops undefined values', () => {
    expect(configFlags({ values: { listen: ':1', 'dry-run': undefined } })).toEqual({ listen: ':1' });
  });
});

describe('describeConfig', () => {
  it('lists each field with its flag, variable, kind, default and description', () => {
    expect(describeConfig(schema)[0]).toEqual({
      path: ['listen'],
      name: 'listen',
      flag: 'listen',
      env: 'NPU_FAULT_LISTEN',
      kind: 'string',
      description: 'ingest endpoint',
      defaultValue: ':8080',
    });
    expect(describeConfig(schema, 'AGENT_').map((f) => f.env)).toContain('AGENT_LEASE_DURATION_SECONDS');
  });
});
