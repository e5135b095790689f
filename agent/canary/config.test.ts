import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ConfigError, describeConfig, loadConfig, parseConfigSection } from '../../platform/index.js';
import { DEFAULT_CANARY_PATTERN, DEFAULT_CANARY_PROMPT, canaryConfigSchema } from './config.js';

/** The section as the agent's config holds it (agent config `canary`). */
const agentLike = z.strictObject({ canary: canaryConfigSchema });

/** The one-line errors of a section that does not parse. */
function problems(section: Record<string, unknown>): string[] {
  try {
    parseConfigSection(canaryConfigSchema, section, 'canary');
  } catch (error) {
    if (error instanceof ConfigError) return [...error.lines];
    throw error;
  }
  return [];
}

describe('the canary config section', () => {
  it('is off by default, and once on asks the default question with the answer check on', () => {
    expect(canaryConfigSchema.parse({})).toEqual({
      api: 'chat',
      prompt: DEFAULT_CANARY_PROMPT,
      maxTokens: 16,
      check: true,
      expect: '',
      expectPattern: DEFAULT_CANARY_PATTERN,
      intervalSeconds: 30,
      timeoutMs: 10_000,
    });
    expect(canaryConfigSchema.parse({}).url).toBeUndefined();
  });

  it('describes every field, each with its flag and variable once it is the agent’s `canary`', () => {
    const fields = describeConfig(agentLike);
    expect(fields.map((f) => f.env)).toEqual([
      'NPU_FAULT_CANARY_URL',
      'NPU_FAULT_CANARY_API',
      'NPU_FAULT_CANARY_MODEL',
      'NPU_FAULT_CANARY_PROMPT',
      'NPU_FAULT_CANARY_MAX_TOKENS',
      'NPU_FAULT_CANARY_SEED',
      'NPU_FAULT_CANARY_CHECK',
      'NPU_FAULT_CANARY_EXPECT',
      'NPU_FAULT_CANARY_EXPECT_PATTERN',
      'NPU_FAULT_CANARY_INTERVAL_SECONDS',
      'NPU_FAULT_CANARY_TIMEOUT_MS',
    ]);
    for (const field of fields)
      expect([field.name, (field.description?.length ?? 0) > 10]).toEqual([field.name, true]);
  });

  it('loads from the environment, as the DaemonSet sets it, the section left out of the file', () => {
    const config = loadConfig(agentLike, {
      env: {
        NPU_FAULT_CANARY_URL: 'http://10.0.0.7:8000',
        NPU_FAULT_CANARY_API: 'completions',
        NPU_FAULT_CANARY_EXPECT_PATTERN: String.raw`^\s*(5|five)\b`,
        NPU_FAULT_CANARY_SEED: '1',
      },
    });
    expect(config.canary).toMatchObject({
      url: 'http://10.0.0.7:8000',
      api: 'completions',
      expectPattern: String.raw`^\s*(5|five)\b`,
      seed: 1,
      check: true,
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a URL that is not http(s)', { url: 'ftp://node:8000' }, 'canary.url: must be an http(s) URL'],
    [
      'an endpoint URL instead of the base',
      { url: 'http://127.0.0.1:8000/v1/completions' },
      'canary.url: is the server’s base URL (http://host:port), without /v1/…: the canary adds /v1/chat/completions or /v1/completions (canary.api)',
    ],
    ['a query', { url: 'http://vllm:8000/?key=x' }, 'canary.url: must not carry a query or a fragment'],
    ['credentials', { url: 'http://user:secret@vllm:8000' }, 'canary.url: must not carry credentials'],
    [
      'a pattern outside the subset',
      { expectPattern: '(?<=a)5' },
      'canary.expectPattern: not a usable pattern: RE2 refuses it: invalid named capture: `(?<=a)5`',
    ],
    [
      'a broken pattern',
      { expectPattern: '(5' },
      'canary.expectPattern: not a usable pattern: RE2 refuses it: missing closing ): `(5`',
    ],
    [
      'both expect and a pattern of one’s own',
      { expect: 'Paris', expectPattern: 'paris' },
      'canary.expectPattern: set expect or expectPattern, not both',
    ],
    [
      'no expectation with the check on',
      { expectPattern: '' },
      'canary.expect: expect and expectPattern are both empty: set one, or check: false to accept any answer',
    ],
    [
      'an unknown api',
      { api: 'responses' },
      'canary.api: Invalid option: expected one of "chat"|"completions"',
    ],
    ['too many tokens', { maxTokens: 4096 }, 'canary.maxTokens: Too big: expected number to be <=256'],
    ['the old raw body', { body: '{"prompt":"1+1="}' }, 'canary: Unrecognized key: "body"'],
  ])('refuses %s, naming the field', (_what, section, line) => {
    expect(problems(section)).toEqual([line]);
  });

  it('takes expect in place of the default pattern, and no expectation at all only with check: false', () => {
    expect(problems({ url: 'http://vllm:8000', expect: 'Paris', prompt: 'The capital of France?' })).toEqual(
      [],
    );
    expect(problems({ expect: 'Paris', expectPattern: '' })).toEqual([]);
    expect(problems({ expectPattern: '', check: false })).toEqual([]);
    expect(problems({ url: 'http://gateway.example/vllm/' })).toEqual([]);
  });
});
