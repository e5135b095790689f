import { describe, expect, it } from '@jest/globals';
import { API_PATHS, completionRequestBody, endpointUrl } from './request.js';

describe('the canary request', () => {
  it('puts the path under the base URL, a gateway path and trailing slashes kept right', () => {
    expect(endpointUrl('http://vllm:8000', API_PATHS.chat)).toBe('http://vllm:8000/v1/chat/completions');
    expect(endpointUrl('http://vllm:8000/', API_PATHS.completions)).toBe('http://vllm:8000/v1/completions');
    expect(endpointUrl('http://gw.example/team-a/vllm//', API_PATHS.chat)).toBe(
      'http://gw.example/team-a/vllm/v1/chat/completions',
    );
  });

  it('asks a chat model with one user message, and a completion model with the prompt', () => {
    const spec = { model: 'llama', prompt: 'What is 2+3?', maxTokens: 8 };
    expect(JSON.parse(completionRequestBody({ ...spec, api: 'chat' }))).toEqual({
      model: 'llama',
      messages: [{ role: 'user', content: 'What is 2+3?' }],
      temperature: 0,
      max_tokens: 8,
      stream: false,
    });
    expect(JSON.parse(completionRequestBody({ ...spec, api: 'completions', seed: 0 }))).toEqual({
      model: 'llama',
      prompt: 'What is 2+3?',
      temperature: 0,
      max_tokens: 8,
      stream: false,
      seed: 0,
    });
  });

  it('keeps a prompt with quotes and line ends one JSON string', () => {
    const body = completionRequestBody({
      api: 'completions',
      model: 'm',
      prompt: 'say "hi"\n',
      maxTokens: 1,
    });
    expect((JSON.parse(body) as { prompt: string }).prompt).toBe('say "hi"\n');
  });
});
