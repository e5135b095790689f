import { describe, expect, it } from '@jest/globals';
import { UNAVAILABLE_LOG_INTERVAL_MS, unavailableLogTurn } from './http-failures.js';
import { createLogger } from './logger.js';

describe('unavailableLogTurn', () => {
  it('logs one line per code per interval, then says how many it held back', () => {
    const log = createLogger({ level: 'silent' });
    expect(unavailableLogTurn(log, 'token_review_busy', 0)).toEqual({ log: true, suppressed: 0 });
    for (let i = 1; i <= 500; i++) expect(unavailableLogTurn(log, 'token_review_busy', i).log).toBe(false);
    // Another code, or another logger, has its own turn.
    expect(unavailableLogTurn(log, 'not_ready', 1).log).toBe(true);
    expect(unavailableLogTurn(createLogger({ level: 'silent' }), 'token_review_busy', 1).log).toBe(true);
    expect(unavailableLogTurn(log, 'token_review_busy', UNAVAILABLE_LOG_INTERVAL_MS)).toEqual({
      log: true,
      suppressed: 500,
    });
    expect(unavailableLogTurn(log, 'token_review_busy', UNAVAILABLE_LOG_INTERVAL_MS + 1).log).toBe(false);
  });
});
