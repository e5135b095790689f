import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import {
  DEFAULT_NODE_PROBLEM_SEVERITIES,
  NODE_PROBLEM_REASONS,
  DEFAULT_NODE_CONDITIONS,
  DEFAULT_RULES,
  MAX_NODE_CONDITIONS,
  MAX_WATCHED_XIDS,
  REASON_BITS,
  REASONS,
  contractReasonTables,
  fixedDeviceBits,
  latchVocabulary,
  rulesSchemaFor,
} from './index.js';

const contract = readFileSync(new URL('../docs/contract.md', import.meta.url), 'utf8');

/** The text of the contract's section under `heading` (the whole line), up to the next heading. */
function section(heading: string): string {
  const start = contract.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/contract.md has no section "${heading}"`);
  const end = contract.indexOf('\n#', start + 1);
  return contract.slice(start, end < 0 ? undefined : end);
}

/** The body rows of the `nth` table in `text` (the first by default), each as its trimmed cells. */
function tableRows(text: string, nth = 0): string[][] {
  const tables: string[][] = [];
  let last = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('|') && !last.startsWith('|')) tables.push([]);
    if (line.startsWith('|')) tables.at(-1)?.push(line);
    last = line;
  }
  const rows = tables[nth] ?? [];
  return rows.slice(2).map((row) =>
    row
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim()),
  );
}

const derived = contractReasonTables(REASONS, DEFAULT_RULES);

describe('docs/contract.md says what the reason catalogue is (contracts/reasons.ts)', () => {
  it('§3.3 lists every device reason, in order, with its condition, severity and duration', () => {
    expect(tableRows(section('### 3.3 Reasons'))).toEqual(derived.device);
  });

  it('§3.7 lists every node reason (overlay), in order, with when it is set and lifted', () => {
    expect(tableRows(section('### 3.7 Overlays'))).toEqual(derived.node);
    // Its second table: the node problems' default severities, in catalogue order.
    const bySeverity = (severity: string): string =>
      NODE_PROBLEM_REASONS.filter((r) => DEFAULT_NODE_PROBLEM_SEVERITIES[r] === severity)
        .map((r) => `\`${r}\``)
        .join(', ');
    expect(tableRows(section('### 3.7 Overlays'), 1)).toEqual([
      ['`critical`', bySeverity('critical')],
      ['`warning`', bySeverity('warning')],
    ]);
    // Its third: the default `node_conditions`.
    expect(tableRows(section('### 3.7 Overlays'), 2)).toEqual(
      DEFAULT_NODE_CONDITIONS.map((c) => [`\`${c.type}\``, `\`${c.reason}\``, `\`${c.severity}\``]),
    );
  });

  it('leaves room in the node mask for the most node_conditions the rules allow', () => {
    const fixed = REASONS.filter((r) => r.scope === 'node' && !('family' in r)).length;
    expect(fixed + MAX_NODE_CONDITIONS).toBeLessThanOrEqual(REASON_BITS);
  });

  it('§3.8 gives the publication order', () => {
    const text = section('### 3.8 Reason order, `reason`, `reasons` and `signals`').replace(/\s+/g, ' ');
    expect(text).toContain(` ${derived.order} `);
  });

  it('§4 gives the limit on watched XIDs the fixed reasons leave', () => {
    const rules = section('## 4. The rules file').replace(/\s+/g, ' ');
    expect(fixedDeviceBits(REASONS) + MAX_WATCHED_XIDS).toBe(32);
    expect(rules).toContain(`(≤ ${MAX_WATCHED_XIDS} entries)`);
    expect(rules).toContain(`(${fixedDeviceBits(REASONS)} fixed reasons and the watched XIDs)`);
  });
});

describe('the rules a catalogue derives', () => {
  it('latch every device reason by name and any XID, and nothing else', () => {
    expect(latchVocabulary(REASONS)).toEqual({
      names: [
        'npu-offline',
        'device-missing',
        'pcie-link-down',
        'ecc-uncorrectable',
        'health-critical',
        'fault-code',
        'ecc-thermal',
        'high-temp',
        'ecc-error',
        'health-warning',
        'inference-canary-failed',
      ],
      patterns: [String.raw`^xid-\d+$`],
    });
    const schema = rulesSchemaFor(REASONS);
    expect(schema.safeParse({ latched: ['high-temp', 'xid-13', 'fault-code'] }).success).toBe(true);
    for (const name of ['agent-unreachable', 'xid-', 'fault-code:critical', 'high-tmp'])
      expect(schema.safeParse({ latched: [name] }).success).toBe(false);
  });

  it('refuse a reason naming a rules field that does not exist', () => {
    const [first] = REASONS;
    expect(() => rulesSchemaFor([{ ...first, section: ['no_such_field'] }])).toThrow(/no_such_field/);
  });
});
