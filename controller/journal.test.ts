import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../platform/index.js';
import { createFileJournal } from './journal.js';

const log = createLogger({ level: 'silent' });

describe('observation journal', () => {
  it('appends one line per observation, a batch at a time', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'journal-')), 'j.jsonl');
    const journal = createFileJournal(path, log);
    journal.append(['{"a":1}', '{"a":2}']);
    journal.append(['{"a":3}']);
    await journal.close();
    expect(readFileSync(path, 'utf8')).toBe('{"a":1}\n{"a":2}\n{"a":3}\n');
  });

  it('stops at its byte limit and counts what it dropped', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'journal-')), 'j.jsonl');
    const journal = createFileJournal(path, log, { maxBytes: 10 });
    journal.append(['{"a":1}', '{"a":2}', '{"a":3}']);
    await journal.close();
    expect(readFileSync(path, 'utf8')).toBe('{"a":1}\n');
    expect(journal.dropped).toBe(2);
  });

  it('turns itself off on a write error instead of crashing the process', async () => {
    const journal = createFileJournal('/nonexistent-dir/j.jsonl', log);
    journal.append(['{"a":1}']);
    await journal.close();
    journal.append(['{"a":2}']);
    expect(journal.dropped).toBeGreaterThanOrEqual(1);
  });
});
