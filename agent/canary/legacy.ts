/**
 * The options agent.ts passed before the canary took its config section (config.ts): a full
 * endpoint URL, a raw JSON body and an `expect` whose empty value meant "any 2xx". Mapped onto
 * the new settings as closely as they go, until agent.ts passes `canaryConfigSchema`'s section;
 * then this file goes.
 */
import { canaryConfigSchema } from './config.js';
import type { CanaryOptions } from './canary.js';

/** The old options. */
export interface LegacyCanaryOptions {
  readonly url: string;
  readonly intervalSeconds: number;
  readonly timeoutMs: number;
  /** The JSON body POSTed; its model, prompt and max_tokens are kept. */
  readonly body: string;
  /** Text the answer must contain; empty: no answer check. */
  readonly expect: string;
}

/** Whether `options` are the old ones (only they have a body). */
export function isLegacyOptions(options: object): options is LegacyCanaryOptions {
  return 'body' in options;
}

/** The new settings for the old options; throws TypeError naming a value the new ones refuse. */
export function fromLegacyOptions(options: LegacyCanaryOptions): CanaryOptions {
  const chatAt = options.url.indexOf('/v1/chat/completions');
  const v1At = options.url.indexOf('/v1/');
  const baseEnd = chatAt >= 0 ? chatAt : v1At >= 0 ? v1At : options.url.length;
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(options.body);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      body = parsed as Record<string, unknown>;
  } catch {
    // an unreadable old body: the new defaults ask the question
  }
  const result = canaryConfigSchema.safeParse({
    url: options.url.slice(0, baseEnd),
    api: chatAt >= 0 ? 'chat' : 'completions',
    intervalSeconds: options.intervalSeconds,
    timeoutMs: options.timeoutMs,
    ...(typeof body.model === 'string' ? { model: body.model } : {}),
    ...(typeof body.prompt === 'string' ? { prompt: body.prompt } : {}),
    ...(typeof body.max_tokens === 'number' ? { maxTokens: body.max_tokens } : {}),
    ...(options.expect === '' ? { check: false } : { expect: options.expect }),
  });
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new TypeError(`canary.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return { ...result.data, url: options.url.slice(0, baseEnd) };
}
