/**
 * Reading and judging the inference server's answers. Pure. The server is a tenant's pod, so
 * every field is checked before use and whatever of its text reaches a message is quoted and
 * cut short. Each outcome has one of a few result kinds, the `result` label of the canary's
 * metrics.
 */
import type { CanaryApi } from './config.js';
import { compileAnswerPattern, type AnswerPattern } from './pattern.js';

/** How a check ended: the label values of `…_canary_checks_total{result}`. */
export const CANARY_RESULTS = [
  'pass',
  'wrong-answer',
  'empty-answer',
  'malformed',
  'http-error',
  'timeout',
  'unreachable',
] as const;
/** One of CANARY_RESULTS. */
export type CanaryResult = (typeof CANARY_RESULTS)[number];

/** One check's outcome: `error` is one line saying why it failed, null when it passed. */
export type CheckOutcome =
  | { readonly result: 'pass'; readonly error: null }
  | { readonly result: Exclude<CanaryResult, 'pass'>; readonly error: string };

/** The outcome of a check that passed. */
export const PASSED: CheckOutcome = { result: 'pass', error: null };

/**
 * How much of an answer is checked. A canary answer is a few tokens; a server that answers
 * pages is checked on its first 4096 characters, which also bounds the pattern's work
 * (states × characters).
 */
export const MAX_CHECKED_ANSWER_CHARS = 4096;

/** What a right answer is. */
export type AnswerCheck =
  | { readonly kind: 'any' }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'pattern'; readonly pattern: AnswerPattern };

/** The check the settings ask for (`expect` wins over `expectPattern`; both validated at load). */
export function answerCheckOf(settings: {
  readonly check: boolean;
  readonly expect: string;
  readonly expectPattern: string;
}): AnswerCheck {
  if (!settings.check) return { kind: 'any' };
  if (settings.expect !== '') return { kind: 'text', text: settings.expect };
  if (settings.expectPattern === '') throw new TypeError('canary: expect and expectPattern are both empty');
  return { kind: 'pattern', pattern: compileAnswerPattern(settings.expectPattern) };
}

/** The answer text of a 2xx body, or why there is none (malformed, empty-answer). */
export function readAnswer(api: CanaryApi, body: string): { answer: string } | CheckOutcome {
  const value = parseJson(body);
  if (value === NOT_JSON) return failure('malformed', 'the answer is not JSON');
  if (!isRecord(value)) return failure('malformed', 'the answer is not a JSON object');
  const choices = value.choices;
  if (!Array.isArray(choices) || choices.length === 0)
    return failure('malformed', 'the answer has no choices');
  const first: unknown = choices[0];
  if (!isRecord(first)) return failure('malformed', 'choices[0] is not an object');
  let content: unknown;
  let field: string;
  if (api === 'chat') {
    if (!isRecord(first.message)) return failure('malformed', 'choices[0].message is missing');
    content = first.message.content;
    field = 'choices[0].message.content';
  } else {
    content = first.text;
    field = 'choices[0].text';
  }
  // A reasoning model that spends max_tokens thinking answers null or nothing: say why it stopped.
  const stopped =
    typeof first.finish_reason === 'string' ? ` (finish_reason ${quote(first.finish_reason, 20)})` : '';
  if (content === null) return failure('empty-answer', `${field} is null${stopped}`);
  if (typeof content !== 'string') return failure('malformed', `${field} is missing or not a string`);
  if (content.trim() === '') return failure('empty-answer', `${field} is empty${stopped}`);
  return { answer: content };
}

/** Whether `answer` is right. */
export function judgeAnswer(answer: string, check: AnswerCheck): CheckOutcome {
  const checked = answer.slice(0, MAX_CHECKED_ANSWER_CHARS);
  switch (check.kind) {
    case 'any':
      return PASSED;
    case 'text':
      return checked.toLowerCase().includes(check.text.toLowerCase())
        ? PASSED
        : failure('wrong-answer', `answer ${quote(answer)} lacks ${JSON.stringify(check.text)}`);
    case 'pattern':
      return check.pattern.test(checked)
        ? PASSED
        : failure('wrong-answer', `answer ${quote(answer)} does not match /${check.pattern.source}/`);
  }
}

/** A non-2xx answer: its status and, when the body says, the server's own one-line message. */
export function httpFailure(what: string, status: number, body: string): CheckOutcome {
  const value = parseJson(body);
  let message: unknown;
  if (isRecord(value)) {
    // OpenAI and newer vLLM: {"error": {"message"}}; older vLLM: {"message"}; FastAPI: {"detail"}.
    message = isRecord(value.error) ? value.error.message : (value.message ?? value.detail);
  }
  const said = typeof message === 'string' && message !== '' ? `: ${quote(message, 120)}` : '';
  return failure('http-error', `${what} answered HTTP ${status}${said}`);
}

/** The model to ask from a `GET /v1/models` body (the first listed: vLLM lists the base model first). */
export function readModelList(body: string): { model: string } | CheckOutcome {
  const value = parseJson(body);
  const data = isRecord(value) ? value.data : undefined;
  if (!Array.isArray(data)) return failure('malformed', 'GET /v1/models: the answer has no data list');
  const first: unknown = data[0];
  if (first === undefined) return failure('malformed', 'GET /v1/models: no model is listed');
  const id = isRecord(first) ? first.id : undefined;
  if (typeof id !== 'string' || id === '' || id.length > 256 || hasControlCharacter(id))
    return failure('malformed', 'GET /v1/models: data[0].id is not a model name');
  return { model: id };
}

/** A failed outcome. */
export function failure(result: Exclude<CanaryResult, 'pass'>, error: string): CheckOutcome {
  return { result, error };
}

/** `text` as a JSON string literal (control characters escaped), cut to `max` characters. */
export function quote(text: string, max = 60): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

const NOT_JSON: unique symbol = Symbol('not JSON');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
