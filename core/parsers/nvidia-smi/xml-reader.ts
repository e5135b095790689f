/**
 * A reader of nvidia-smi's `-q -x` XML into the `-q` tree. Hand-written, not a library: no
 * XML parser is among the dependencies, and the tool's XML is regular (elements, attributes,
 * text); a scanner keeps it linear in its input (docs/decisions/0035-parsers-linear-time.md).
 */
import { ParseError, excerpt } from '../../errors.js';
import { isBlank } from '../common.js';
import { keyOf, type QNode } from './query-tree.js';

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeXml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => XML_ENTITIES[name] ?? '');
}

/** A character that may continue an XML element or attribute name (`[\w.-]`). */
function isNameChar(char: string): boolean {
  return /^[\w.-]$/.test(char);
}

/** `key="value"` pairs of a start tag's attribute text, read by scanning. */
function readAttributes(text: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    if (!isNameChar(text[i] ?? '')) {
      i++;
      continue;
    }
    const start = i;
    while (i < text.length && isNameChar(text[i] ?? '')) i++;
    const name = text.slice(start, i);
    let j = i;
    while (isBlank(text[j] ?? '')) j++;
    if (text[j] !== '=') continue;
    j++;
    while (isBlank(text[j] ?? '')) j++;
    if (text[j] !== '"') continue;
    const close = text.indexOf('"', j + 1);
    if (close < 0) break;
    attrs[name] = decodeXml(text.slice(j + 1, close));
    i = close + 1;
  }
  return attrs;
}

/** One piece of markup: a start, end or empty-element tag, or something skipped (comment, prolog, DOCTYPE). */
interface Markup {
  start: number;
  end: number;
  tag: { name: string; closing: boolean; selfClosing: boolean; attrText: string } | null;
}

/**
 * The next piece of markup at or after `from`, or null when there is none. Scans with indexOf:
 * a `<` that opens nothing (`< 3`, an unterminated tag) is text, and the scan goes on after it.
 * `missing` remembers closers (`-->`, `>`, `?>`) that no longer occur, so that a thousand
 * unterminated `<!--` cost one search, not a thousand.
 */
function nextMarkup(text: string, from: number, missing: Set<string>): Markup | null {
  for (let start = text.indexOf('<', from); start >= 0; start = text.indexOf('<', start + 1)) {
    const skipUntil = (close: string): Markup | null => {
      const at = missing.has(close) ? -1 : text.indexOf(close, start + 2);
      if (at < 0) missing.add(close);
      return at < 0 ? null : { start, end: at + close.length, tag: null };
    };
    if (text.startsWith('<!--', start)) {
      const comment = skipUntil('-->');
      if (comment) return comment;
    }
    if (text.startsWith('<!', start)) {
      const declaration = skipUntil('>');
      if (declaration) return declaration;
      continue;
    }
    if (text.startsWith('<?', start)) {
      const prolog = skipUntil('?>');
      if (prolog) return prolog;
      continue;
    }
    const closing = text[start + 1] === '/';
    const nameStart = start + (closing ? 2 : 1);
    if (!/^[A-Za-z_]$/.test(text[nameStart] ?? '')) continue;
    const gt = text.indexOf('>', nameStart);
    if (gt < 0) return null;
    let nameEnd = nameStart + 1;
    while (nameEnd < gt && isNameChar(text[nameEnd] ?? '')) nameEnd++;
    const selfClosing = text[gt - 1] === '/' && gt - 1 >= nameEnd;
    return {
      start,
      end: gt + 1,
      tag: {
        name: text.slice(nameStart, nameEnd),
        closing,
        selfClosing,
        attrText: text.slice(nameEnd, selfClosing ? gt - 1 : gt),
      },
    };
  }
  return null;
}

/** How many line ends `text` holds between `from` and `to` (only that stretch is read). */
function countLineEnds(text: string, from: number, to: number): number {
  let n = 0;
  for (let at = from; at < to; at++) if (text.charCodeAt(at) === 10) n++;
  return n;
}

/**
 * A tolerant reader of nvidia-smi's XML: elements, attributes and text; the prolog, DOCTYPE
 * and comments are skipped. A mismatched or missing closing tag is a ParseError naming the
 * line, so a truncated document never passes as a shorter one.
 */
export function readXmlTree(text: string): QNode {
  const root: QNode = { key: '', id: '', value: null, attrs: {}, line: 0, children: [] };
  const stack: QNode[] = [root];
  const missing = new Set<string>();
  let line = 1;
  let last = 0;
  for (let markup = nextMarkup(text, 0, missing); markup !== null; markup = nextMarkup(text, last, missing)) {
    line += countLineEnds(text, last, markup.start);
    const top = stack[stack.length - 1] as QNode;
    const between = text.slice(last, markup.start).trim();
    if (between !== '' && top !== root) top.value = decodeXml(between);
    last = markup.end;
    const tag = markup.tag;
    if (tag?.closing) {
      if (top.key !== tag.name)
        throw new ParseError(`XML: </${excerpt(tag.name)}> closes <${excerpt(top.key) || 'nothing'}>`, line);
      stack.pop();
    } else if (tag) {
      const node: QNode = {
        key: tag.name,
        id: keyOf(tag.name),
        value: null,
        attrs: readAttributes(tag.attrText),
        line,
        children: [],
      };
      top.children.push(node);
      if (!tag.selfClosing) stack.push(node);
    }
    line += countLineEnds(text, markup.start, markup.end);
  }
  const open = stack[stack.length - 1];
  if (open && open !== root)
    throw new ParseError(
      `XML ends inside <${excerpt(open.key)}> opened at line ${open.line}: the output is truncated`,
      line,
    );
  return root;
}
