/**
 * RulesError: why a rules file was refused, always on one line that says where.
 *
 * Every error has a 1-based line. Most also name a field, spelt the way the file spells its
 * keys (`fault_codes.0x80E0`, `xids.critical[1]`); errors of the text itself (YAML syntax
 * outside any field, a top level that is not a mapping, an oversized file) have none:
 *
 *   `<file>:<line>: <field>: <message>`   a field is at fault
 *   `<file>:<line>: <message>`            the text itself is at fault
 */
import { NpuFaultError } from '../errors.js';

/** A rules file that could not be read or validated. */
export class RulesError extends NpuFaultError {
  /** The field at fault (`high_temp.threshold_c`), or '' when the text itself is at fault. */
  readonly path: string;
  /** The 1-based line of the text where the fault was written. */
  readonly line: number;
  /** What is wrong, without the location; one line. */
  readonly detail: string;

  constructor(path: string, detail: string, line: number, options?: { cause?: unknown }) {
    const field = oneLine(path, Number.POSITIVE_INFINITY);
    const what = oneLine(detail, MAX_DETAIL_CHARS) || 'invalid rules';
    const at = Number.isSafeInteger(line) && line >= 1 ? line : 1;
    super('rules_error', `line ${at}: ${field ? `${field}: ` : ''}${what}`, options);
    this.path = field;
    this.line = at;
    this.detail = what;
  }

  /** The one-line report for rules file `file`: `<file>:<line>: [<field>: ]<message>`. */
  describe(file: string): string {
    const field = this.path ? `${this.path}: ` : '';
    return `${oneLine(file, Number.POSITIVE_INFINITY)}:${this.line}: ${field}${this.detail}`;
  }
}

/** Keys printed bare in a field path; anything else is quoted (`fault_codes["80 E0"]`). */
const BARE_KEY = /^[A-Za-z0-9_$-]+$/;
/** Text from the file is cut to this many characters in messages (a key can be any length). */
const MAX_QUOTED_CHARS = 40;
/** The most characters of a message (a YAML message can quote a tag of any length). */
const MAX_DETAIL_CHARS = 240;
/**
 * Characters a terminal would not show as themselves: bidi and zero-width format characters,
 * lone surrogates, NEL and the line and paragraph separators.
 */
const INVISIBLE = /[\p{Cf}\p{Cs}\u0085\u2028\u2029]/gu;
/** Line breaks and other control characters, with the spaces around them. */
const CONTROLS = / *\p{Cc}[ \p{Cc}]*/gu;

/**
 * A field path as text: `a.b[2].c`, with keys as written. A key that is not a plain ASCII
 * word is quoted as a JSON string (`["a b"]`), so a key holding dots, brackets, line breaks or
 * bidi controls can neither fake another path nor break or reorder the line.
 */
export function fieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (typeof part === 'string' && BARE_KEY.test(part)) out += out ? `.${part}` : part;
    else out += `[${quote(String(part))}]`;
  }
  return out;
}

/** Text from the file for a message: a JSON string, cut to MAX_QUOTED_CHARS, invisible characters escaped. */
export function quote(text: string): string {
  const chars = [...text];
  const cut = chars.length > MAX_QUOTED_CHARS ? `${chars.slice(0, MAX_QUOTED_CHARS).join('')}…` : text;
  return JSON.stringify(cut).replace(INVISIBLE, escape);
}

/** `text` on one line: control characters as one space, invisible ones escaped, cut to `max`. */
function oneLine(text: string, max: number): string {
  const chars = [...text.replace(CONTROLS, ' ').replace(INVISIBLE, escape).trim()];
  return chars.length > max ? `${chars.slice(0, max).join('')}…` : chars.join('');
}

function escape(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}
