/**
 * The canary's requests to an OpenAI-compatible server (vLLM, and the servers that copy its
 * API): the completion request built from the config, and the model list it falls back on
 * when no model is configured. Pure: URLs and bodies only.
 */
import type { CanaryApi } from './config.js';

/** The path each API answers on. */
export const API_PATHS: Readonly<Record<CanaryApi, string>> = {
  chat: '/v1/chat/completions',
  completions: '/v1/completions',
};

/** Where the server lists the models it serves. */
export const MODELS_PATH = '/v1/models';

/** `path` under the server's base URL (which may have a path of its own, behind a gateway). */
export function endpointUrl(baseUrl: string, path: string): string {
  let end = baseUrl.length;
  while (end > 0 && baseUrl[end - 1] === '/') end--;
  return baseUrl.slice(0, end) + path;
}

/** What the request is built from. */
export interface CompletionRequestSpec {
  readonly api: CanaryApi;
  readonly model: string;
  readonly prompt: string;
  readonly maxTokens: number;
  readonly seed?: number | undefined;
}

/**
 * The JSON body of one canary request: the fixed prompt, greedy (temperature 0, so a healthy
 * server gives the same answer every time), a few tokens, no streaming.
 */
export function completionRequestBody(spec: CompletionRequestSpec): string {
  const question =
    spec.api === 'chat' ? { messages: [{ role: 'user', content: spec.prompt }] } : { prompt: spec.prompt };
  return JSON.stringify({
    model: spec.model,
    ...question,
    temperature: 0,
    max_tokens: spec.maxTokens,
    stream: false,
    ...(spec.seed === undefined ? {} : { seed: spec.seed }),
  });
}
