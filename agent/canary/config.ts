/**
 * The canary's config section (agent config `canary`): where the node's inference server is,
 * what to ask it and what a right answer looks like. Off while `url` is unset.
 */
import { z } from 'zod';
import type { DeepReadonly } from '../../platform/index.js';
import { answerPatternProblem, MAX_PATTERN_LENGTH } from './pattern.js';

/** The OpenAI-compatible endpoints the canary can ask (`api`). */
export const CANARY_APIS = ['chat', 'completions'] as const;
/** One of CANARY_APIS. */
export type CanaryApi = (typeof CANARY_APIS)[number];

/**
 * The default question and its check. An instruction-tuned model at temperature 0 answers
 * "5" (or "2 + 3 = 5", "The answer is 5."): one fact every model knows, asked so the answer is
 * short. `\b5\b` accepts each of those and refuses "15", "25" or "6"; the check is
 * case-insensitive. MAX_TOKENS leaves room for a model that restates the sum, and is still a
 * fraction of a second of decoding on a loaded server.
 */
export const DEFAULT_CANARY_PROMPT = 'What is 2+3? Answer with the number only.';
/** The default `expectPattern` (see DEFAULT_CANARY_PROMPT). */
export const DEFAULT_CANARY_PATTERN = String.raw`\b5\b`;
/** The default `maxTokens` (see DEFAULT_CANARY_PROMPT). */
export const DEFAULT_CANARY_MAX_TOKENS = 16;

/** What is wrong with the inference server's base URL, or undefined. */
export function baseUrlProblem(text: string): string | undefined {
  if (!URL.canParse(text)) return undefined; // the URL check says what is wrong
  const url = new URL(text);
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.search !== '' || url.hash !== '') return 'must not carry a query or a fragment';
  if (/\/v1(\/|$)/.test(url.pathname))
    return 'is the server’s base URL (http://host:port), without /v1/…: the canary adds /v1/chat/completions or /v1/completions (canary.api)';
  return undefined;
}

/** The canary's settings. */
export const canaryConfigSchema = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
      .superRefine((value, ctx) => {
        const problem = baseUrlProblem(value);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional()
      .describe(
        'the node’s inference server, its base URL (e.g. http://vllm-canary.ai-infra.svc:8000, a node-local Service; docs/inference-canary.md); the canary is off when unset',
      ),
    api: z
      .enum(CANARY_APIS)
      .default('chat')
      .describe(
        'chat: POST <url>/v1/chat/completions (instruction-tuned models); completions: POST <url>/v1/completions',
      ),
    model: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        'the model asked (vLLM’s --served-model-name); unset: the first model GET <url>/v1/models lists, asked again after a failed check',
      ),
    prompt: z
      .string()
      .min(1)
      .max(2000)
      .default(DEFAULT_CANARY_PROMPT)
      .describe(
        'the fixed question (the chat user message, or the completion prompt), sent at temperature 0',
      ),
    maxTokens: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(DEFAULT_CANARY_MAX_TOKENS)
      .describe('max_tokens of the request: room for the expected answer, no more'),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .optional()
      .describe(
        'the request’s seed (sampling is greedy at temperature 0; some servers take it anyway); unset: none sent',
      ),
    check: z
      .boolean()
      .default(true)
      .describe(
        'check the answer against expect or expectPattern; false: any non-empty answer in the right shape passes',
      ),
    expect: z
      .string()
      .max(MAX_PATTERN_LENGTH)
      .default('')
      .describe('text the answer must contain, case-insensitive; when set it replaces expectPattern'),
    expectPattern: z
      .string()
      .max(MAX_PATTERN_LENGTH)
      .superRefine((value, ctx) => {
        const problem = value === '' ? undefined : answerPatternProblem(value);
        if (problem !== undefined)
          ctx.addIssue({ code: 'custom', message: `not a usable pattern: ${problem}` });
      })
      .default(DEFAULT_CANARY_PATTERN)
      .describe(
        'a regular expression the answer must match somewhere, case-insensitive; RE2 syntax, matched in linear time (no backreferences or lookarounds: docs/inference-canary.md)',
      ),
    intervalSeconds: z.number().min(1).max(3600).default(30).describe('time between canary requests'),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(300_000)
      .default(10_000)
      .describe(
        'a check (the model lookup and the request, the answer read whole) taking longer fails as timeout',
      ),
  })
  .superRefine((config, ctx) => {
    if (!config.check) return;
    const patternSet = config.expectPattern !== '' && config.expectPattern !== DEFAULT_CANARY_PATTERN;
    if (config.expect !== '' && patternSet)
      ctx.addIssue({
        code: 'custom',
        path: ['expectPattern'],
        message: 'set expect or expectPattern, not both',
      });
    if (config.expect === '' && config.expectPattern === '')
      ctx.addIssue({
        code: 'custom',
        path: ['expect'],
        message: 'expect and expectPattern are both empty: set one, or check: false to accept any answer',
      });
  });

/** The canary's settings after defaults (as loadConfig returns them). */
export type CanaryConfig = DeepReadonly<z.output<typeof canaryConfigSchema>>;
