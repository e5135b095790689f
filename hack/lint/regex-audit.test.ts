import { describe, expect, it } from '@jest/globals';
import { auditRegex } from './regex-audit.js';

/** Patterns the parsers once used, each super-linear on a long line (docs/decisions/0035): all refused. */
const FORMER_PARSER_PATTERNS: ReadonlyArray<[string, RegExp]> = [
  ['splitLines: trailing blanks', /\s+$/],
  ['hdc: V8 location suffix', /\s+in JSON at position \d+.*$/],
  ['hdc: V8 quote of the text', /, (\.\.\.)?".*$/],
  ['kmsg: facility prefix', /^(?:\S+\s*:\S+\s*:\s*)?(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[,.](\d+))?/],
  ['npu-smi: blanks around /', /\s*\/\s*/g],
  ['npu-smi: header unit', /\(.*$/],
  ['npu-smi: NPU id and name', /^(\d+)\s*(.*)$/],
  ['npu-smi -t: key : value', /^\s*([^:]*?)\s*:\s?(.*)$/],
  ['npu-smi -m: row', /^(\d+)\s+(\d+)\s+(\d+|-)\s+(.+)$/],
  ['nvidia-smi: lost handle', /^Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+):\s*(.*)$/],
  ['nvidia-smi -q: key : value', /^(.+?)\s+:(?:\s(.*))?$/],
  ['nvidia-smi XML: tag', /<(\/?)([A-Za-z_][\w.-]*)([^>]*?)(\/?)>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<![^>]*>/g],
  ['nvidia-smi XML: attribute', /([\w.-]+)\s*=\s*"([^"]*)"/g],
  [
    'nvidia-smi table: GPU row',
    /^\|\s*(\d+)\s+(.+?)\s+(On|Off|TCC|WDDM)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+\S+\s*\|\s*(.*?)\s*\|$/,
  ],
  ['nvidia-smi table: metric row', /^\|\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*\/\s*(\S+)\s*\|/],
];

describe('auditRegex', () => {
  it.each(FORMER_PARSER_PATTERNS)('refuses the former %s pattern', (_name, re) => {
    expect(auditRegex(re.source, re.flags)).toMatch(/^polynomial: /);
  });

  it.each([
    [/(a+)+$/, 'nested repeats'],
    [/(a|a)*$/, 'an alternation of equals under a star'],
    [/(a*)*b/, 'a star of a star'],
    [/(a*|b)*c/, 'a star inside an alternation under a star'],
    [/^(\w+\s?)*$/, 'words with optional blanks repeated'],
  ])('calls %s exponential (%s)', (re) => {
    expect(auditRegex(re.source, re.flags)).toMatch(/^exponential: /);
  });

  it.each([
    [/\s*x?\s*/, 'two blank loops around an optional'],
    [/^\s*[^:]*:/, 'blanks then non-colons (both take a blank)'],
    [/a.*b.*c/, 'unanchored .* twice'],
    [/\d+$/, 'an unanchored loop before $'],
  ])('calls %s polynomial (%s)', (re) => {
    expect(auditRegex(re.source, re.flags)).toMatch(/^polynomial: /);
  });

  it.each([
    /^\d+$/,
    /^([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)$/,
    /Driver Version:\s*(\S+)/,
    /npu-smi\s+\S+\s+Version:\s*(\S+)/,
    /\r\n|\r|\n/,
    /[\s,]/,
    /x{1,8}y/,
    /^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?$/,
    /^0+(?=[0-9A-Fa-f]{4})/,
    /^=+NVSMI LOG=+$/,
    /(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[,.](\d+))?(Z|[+-]\d{2}:?\d{2})?/,
    /GPU is lost/i,
  ])('passes %s', (re) => {
    expect(auditRegex(re.source, re.flags)).toBeNull();
  });

  it('checks lookaround bodies as patterns of their own', () => {
    expect(auditRegex('x(?=(a+)+b)')).toMatch(/^in the lookaround .*exponential/);
  });

  it.each([
    ['(a)\\1', /backreference/],
    ['\\u0041', /escape \\u/],
    ['[\\x41]', /escape \\x/],
    ['中', /beyond Latin-1/],
    ['(?<=a)(?=b)*', /quantified lookaround/],
  ])('reports %s as unsupported rather than passing it', (source, reason) => {
    expect(auditRegex(source)).toMatch(/^unsupported: /);
    expect(auditRegex(source)).toMatch(reason);
  });

  it('reports the u flag as unsupported', () => {
    expect(auditRegex('a', 'u')).toMatch(/^unsupported: the u and v flags/);
  });
});
