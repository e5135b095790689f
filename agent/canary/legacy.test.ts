import { describe, expect, it } from '@jest/globals';
import { DEFAULT_CANARY_PROMPT } from './config.js';
import { fromLegacyOptions, isLegacyOptions } from './legacy.js';

const old = {
  url: 'http://127.0.0.1:8000/v1/completions',
  intervalSeconds: 30,
  timeoutMs: 10_000,
  body: '{"prompt":"1+1=","max_tokens":1,"temperature":0}',
  expect: '',
};

describe('the old canary options (until agent.ts passes the config section)', () => {
  it('are told apart by their body', () => {
    expect(isLegacyOptions(old)).toBe(true);
    expect(isLegacyOptions({ url: 'http://x:1', api: 'chat' })).toBe(false);
  });

  it('map onto the base URL, the api of the endpoint, the body’s question, and no check for an empty expect', () => {
    expect(fromLegacyOptions(old)).toMatchObject({
      url: 'http://127.0.0.1:8000',
      api: 'completions',
      prompt: '1+1=',
      maxTokens: 1,
      check: false,
    });
    expect(
      fromLegacyOptions({
        ...old,
        url: 'http://vllm:8000/v1/chat/completions',
        body: '{"model":"llama","messages":[]}',
        expect: '"2"',
      }),
    ).toMatchObject({
      url: 'http://vllm:8000',
      api: 'chat',
      model: 'llama',
      prompt: DEFAULT_CANARY_PROMPT,
      check: true,
      expect: '"2"',
    });
  });

  it('throw naming a value the new settings refuse', () => {
    expect(() => fromLegacyOptions({ ...old, intervalSeconds: 0.5 })).toThrow(
      'canary.intervalSeconds: Too small: expected number to be >=1',
    );
  });
});
