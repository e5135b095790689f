import { describe, expect, it } from '@jest/globals';
import {
  MAX_CHECKED_ANSWER_CHARS,
  answerCheckOf,
  httpFailure,
  judgeAnswer,
  readAnswer,
  readModelList,
} from './answer.js';

const chat = (content: unknown, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ choices: [{ message: { role: 'assistant', content }, ...extra }] });

describe('reading an answer', () => {
  it('takes the chat message content or the completion text', () => {
    expect(readAnswer('chat', chat('5'))).toEqual({ answer: '5' });
    expect(readAnswer('completions', JSON.stringify({ choices: [{ text: ' 5' }] }))).toEqual({
      answer: ' 5',
    });
  });

  it.each<[string, 'chat' | 'completions', string, string]>([
    ['not JSON', 'chat', '<html>', 'the answer is not JSON'],
    ['JSON null', 'chat', 'null', 'the answer is not a JSON object'],
    ['an array', 'chat', '[1]', 'the answer is not a JSON object'],
    ['no choices', 'chat', '{"id":"x"}', 'the answer has no choices'],
    ['empty choices', 'chat', '{"choices":[]}', 'the answer has no choices'],
    ['a choice that is no object', 'chat', '{"choices":["5"]}', 'choices[0] is not an object'],
    ['no message', 'chat', '{"choices":[{"text":"5"}]}', 'choices[0].message is missing'],
    ['content a number', 'chat', chat(5), 'choices[0].message.content is missing or not a string'],
    [
      'content missing',
      'chat',
      '{"choices":[{"message":{}}]}',
      'choices[0].message.content is missing or not a string',
    ],
    ['a chat answer to a completion', 'completions', chat('5'), 'choices[0].text is missing or not a string'],
  ])('calls %s malformed', (_what, api, body, error) => {
    expect(readAnswer(api, body)).toEqual({ result: 'malformed', error });
  });

  it('calls a null, empty or blank answer empty, saying why the model stopped', () => {
    expect(readAnswer('chat', chat(null, { finish_reason: 'length' }))).toEqual({
      result: 'empty-answer',
      error: 'choices[0].message.content is null (finish_reason "length")',
    });
    expect(readAnswer('chat', chat(' \n\t'))).toEqual({
      result: 'empty-answer',
      error: 'choices[0].message.content is empty',
    });
    expect(readAnswer('completions', '{"choices":[{"text":""}]}')).toMatchObject({ result: 'empty-answer' });
  });
});

describe('judging an answer', () => {
  const pattern = answerCheckOf({ check: true, expect: '', expectPattern: String.raw`\b5\b` });

  it('passes what matches and quotes, cut short, what does not', () => {
    expect(judgeAnswer('2 + 3 = 5', pattern)).toEqual({ result: 'pass', error: null });
    expect(judgeAnswer('15', pattern)).toEqual({
      result: 'wrong-answer',
      error: String.raw`answer "15" does not match /\b5\b/`,
    });
    const long = `${'x'.repeat(100)}\u001b[2J`;
    expect(judgeAnswer(long, pattern).error).toBe(`answer "${'x'.repeat(60)}…" does not match /\\b5\\b/`);
    expect(judgeAnswer('line\none "quoted"', pattern).error).toBe(
      String.raw`answer "line\none \"quoted\"" does not match /\b5\b/`,
    );
  });

  it('checks only the first MAX_CHECKED_ANSWER_CHARS characters', () => {
    const text = answerCheckOf({ check: true, expect: 'five', expectPattern: '' });
    expect(judgeAnswer(`${' '.repeat(MAX_CHECKED_ANSWER_CHARS - 4)}FIVE`, text).result).toBe('pass');
    expect(judgeAnswer(`${' '.repeat(MAX_CHECKED_ANSWER_CHARS - 3)}five`, text).result).toBe('wrong-answer');
    expect(judgeAnswer(`${' '.repeat(MAX_CHECKED_ANSWER_CHARS)}5`, pattern).result).toBe('wrong-answer');
  });

  it('builds the check the settings ask for: expect wins, check: false takes anything', () => {
    expect(answerCheckOf({ check: false, expect: 'x', expectPattern: 'y' })).toEqual({ kind: 'any' });
    expect(answerCheckOf({ check: true, expect: 'x', expectPattern: 'y' })).toEqual({
      kind: 'text',
      text: 'x',
    });
    expect(answerCheckOf({ check: true, expect: '', expectPattern: 'y' }).kind).toBe('pattern');
    expect(() => answerCheckOf({ check: true, expect: '', expectPattern: '' })).toThrow(TypeError);
  });
});

describe('an error answer', () => {
  it.each([
    [
      '{"error":{"message":"The model `x` does not exist."}}',
      'POST /x answered HTTP 404: "The model `x` does not exist."',
    ],
    ['{"object":"error","message":"bad request"}', 'POST /x answered HTTP 404: "bad request"'],
    ['{"detail":"Not Found"}', 'POST /x answered HTTP 404: "Not Found"'],
    ['{"detail":[{"loc":["body"]}]}', 'POST /x answered HTTP 404'],
    ['<html>nginx</html>', 'POST /x answered HTTP 404'],
    [JSON.stringify({ message: 'm'.repeat(500) }), `POST /x answered HTTP 404: "${'m'.repeat(120)}…"`],
  ])('%s → %s', (body, error) => {
    expect(httpFailure('POST /x', 404, body)).toEqual({ result: 'http-error', error });
  });
});

describe('the model list', () => {
  it('gives the first model listed', () => {
    expect(readModelList('{"object":"list","data":[{"id":"llama"},{"id":"lora-a"}]}')).toEqual({
      model: 'llama',
    });
  });

  it.each([
    ['nope', 'GET /v1/models: the answer has no data list'],
    ['{"data":{}}', 'GET /v1/models: the answer has no data list'],
    ['{"data":[]}', 'GET /v1/models: no model is listed'],
    ['{"data":[{"id":""}]}', 'GET /v1/models: data[0].id is not a model name'],
    ['{"data":[{"id":"a\\nb"}]}', 'GET /v1/models: data[0].id is not a model name'],
    [JSON.stringify({ data: [{ id: 'm'.repeat(257) }] }), 'GET /v1/models: data[0].id is not a model name'],
    ['{"data":["llama"]}', 'GET /v1/models: data[0].id is not a model name'],
  ])('refuses %s', (body, error) => {
    expect(readModelList(body)).toEqual({ result: 'malformed', error });
  });
});
