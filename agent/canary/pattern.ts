/**
 * The canary's answer pattern (`expectPattern`): a subset of JavaScript's regular expression
 * syntax, matched without V8's backtracking engine. The answer comes from the inference
 * server, a tenant's pod, and the pattern from a person who may write `(\d+)+` without
 * noticing; a backtracking engine would take exponential time on that pair. So the pattern is
 * compiled to a Thompson automaton and simulated state-set by state-set (Pike's VM without
 * captures): every search costs at most (automaton size) × (answer length) steps, whatever
 * the pattern, and both are bounded (MAX_PATTERN_STATES, the canary's answer cap).
 *
 * Supported: literals, `.`, classes (`[a-z]`, `[^…]`, `\d \w \s` and their negations),
 * groups `(…)` `(?:…)`, `|`, `* + ? {n} {n,} {n,m}` (a trailing lazy `?` is accepted: for
 * a yes/no match it changes nothing), `^ $ \b \B`, escapes `\n \r \t \f \v \0` and any escaped
 * punctuation. Refused with a one-line reason: backreferences, lookarounds, named groups,
 * `\x \u \c \p` escapes and unknown letter escapes. Matching is case-insensitive (ASCII case
 * folding, as a JavaScript `i` flag without `u`), searches anywhere in the answer (anchor with
 * `^`/`$`) and works on UTF-16 code units, as JavaScript does without the `u` flag.
 */

/** The longest pattern taken (a canary pattern checks a few words). */
export const MAX_PATTERN_LENGTH = 200;
/** The largest count in a `{n,m}` quantifier. */
export const MAX_PATTERN_REPEAT = 100;
/** The most automaton states once quantifiers are expanded (`(a{100}){100}` is refused). */
export const MAX_PATTERN_STATES = 2000;

/** A compiled answer pattern. */
export interface AnswerPattern {
  /** The pattern as written. */
  readonly source: string;
  /** Whether the pattern matches somewhere in `text`. */
  test(text: string): boolean;
  /** The states visited searching all of `text` (what tests hold linear in its length). */
  work(text: string): number;
}

/** A pattern outside the supported subset, or malformed: `message` is one line. */
export class PatternError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PatternError';
  }
}

/** What is wrong with `source` as an answer pattern, or undefined when it compiles. */
export function answerPatternProblem(source: string): string | undefined {
  try {
    compileAnswerPattern(source);
    return undefined;
  } catch (error) {
    if (error instanceof PatternError) return error.message;
    throw error;
  }
}

/** Compiles `source`; throws PatternError naming what is wrong and where. */
export function compileAnswerPattern(source: string): AnswerPattern {
  if (source.length > MAX_PATTERN_LENGTH)
    throw new PatternError(`is ${source.length} characters long; at most ${MAX_PATTERN_LENGTH}`);
  const tree = new PatternParser(source).parse();
  const program = new ProgramBuilder().build(tree);
  return {
    source,
    test: (text) => run(program, text.toLowerCase()).matched,
    work: (text) => run(program, text.toLowerCase(), false).visited,
  };
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** A test on one (lower-cased) character of the answer. */
type CharTest = (char: string) => boolean;
type Assertion = 'start' | 'end' | 'word-boundary' | 'not-word-boundary';

type Node =
  | { kind: 'char'; test: CharTest }
  | { kind: 'assert'; which: Assertion }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'alt'; options: Node[] }
  | { kind: 'repeat'; body: Node; min: number; max: number };

const LINE_TERMINATORS = '\n\r\u2028\u2029';
const WHITESPACE = ' \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff';
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  r: '\r',
  t: '\t',
  f: '\f',
  v: '\v',
  '0': '\0',
};

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
/** `*`, `+`, `?` or `{` (never the empty string past the end, which `includes` would find). */
const startsQuantifier = (c: string): boolean => c !== '' && '*+?{'.includes(c);
const isWordChar = (c: string): boolean =>
  isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isSpace = (c: string): boolean => WHITESPACE.includes(c) || (c >= '\u2000' && c <= '\u200a');
const isAsciiLetterOrDigit = (c: string): boolean => isWordChar(c) && c !== '_';

/** The class escapes `\d \D \w \W \s \S`, or undefined for another letter. */
function classEscape(letter: string): CharTest | undefined {
  const base = { d: isDigit, w: isWordChar, s: isSpace }[letter.toLowerCase()];
  if (!base || !'dwsDWS'.includes(letter)) return undefined;
  return letter === letter.toLowerCase() ? base : (c) => !base(c);
}

/** A recursive-descent reader of the supported subset; errors name the offending offset. */
class PatternParser {
  private i = 0;
  private depth = 0;

  constructor(private readonly source: string) {}

  parse(): Node {
    const node = this.disjunction();
    if (this.i < this.source.length) throw this.error(`unmatched ')'`);
    return node;
  }

  private error(what: string): PatternError {
    return new PatternError(`${what} at offset ${this.i}`);
  }

  private peek(offset = 0): string {
    return this.source[this.i + offset] ?? '';
  }

  private disjunction(): Node {
    const options = [this.alternative()];
    while (this.peek() === '|') {
      this.i++;
      options.push(this.alternative());
    }
    return options.length === 1 ? (options[0] as Node) : { kind: 'alt', options };
  }

  private alternative(): Node {
    const items: Node[] = [];
    while (this.i < this.source.length && this.peek() !== '|' && this.peek() !== ')') items.push(this.term());
    return { kind: 'seq', items };
  }

  private term(): Node {
    const assertion = this.assertion();
    if (assertion) {
      if (startsQuantifier(this.peek())) throw this.error('a quantifier after an assertion');
      return { kind: 'assert', which: assertion };
    }
    return this.quantified(this.atom());
  }

  private assertion(): Assertion | undefined {
    const c = this.peek();
    if (c === '^' || c === '$') {
      this.i++;
      return c === '^' ? 'start' : 'end';
    }
    if (c === '\\' && (this.peek(1) === 'b' || this.peek(1) === 'B')) {
      this.i += 2;
      return this.source[this.i - 1] === 'b' ? 'word-boundary' : 'not-word-boundary';
    }
    return undefined;
  }

  private atom(): Node {
    const c = this.peek();
    if (c === '(') return this.group();
    if (c === '[') return { kind: 'char', test: this.characterClass() };
    if (c === '\\') return { kind: 'char', test: this.escape() };
    if (startsQuantifier(c)) throw this.error(`'${c}' with nothing to repeat`);
    this.i++;
    if (c === '.') return { kind: 'char', test: (x) => !LINE_TERMINATORS.includes(x) };
    return { kind: 'char', test: literal(c) };
  }

  private group(): Node {
    if (this.peek(1) === '?') {
      if (this.peek(2) !== ':') throw this.error('lookarounds and named groups are not supported');
      this.i += 3;
    } else this.i++;
    // Deep nesting would only grow the parser's stack; no answer check needs it.
    if (++this.depth > 32) throw this.error('groups nested deeper than 32');
    const body = this.disjunction();
    this.depth--;
    if (this.peek() !== ')') throw this.error(`unterminated group, expected ')'`);
    this.i++;
    return body;
  }

  /** An escape outside a class (`\b` and `\B` are assertions, read before). */
  private escape(): CharTest {
    const letter = this.peek(1);
    if (letter === '') throw this.error('a trailing backslash');
    this.i += 2;
    const charClass = classEscape(letter);
    if (charClass) return charClass;
    return literal(this.escapedCharacter(letter));
  }

  /** The character an escape stands for (not a class escape). */
  private escapedCharacter(letter: string): string {
    // Read past the escape already: errors name where it starts.
    const error = (what: string): PatternError => new PatternError(`${what} at offset ${this.i - 2}`);
    if (letter === '0' && isDigit(this.peek())) throw error('octal escapes are not supported');
    const simple = SIMPLE_ESCAPES[letter];
    if (simple !== undefined) return simple;
    if (isDigit(letter)) throw error('backreferences are not supported');
    if (isAsciiLetterOrDigit(letter)) throw error(`the escape \\${letter} is not supported`);
    return letter;
  }

  private characterClass(): CharTest {
    this.i++;
    const negated = this.peek() === '^';
    if (negated) this.i++;
    const members: CharTest[] = [];
    while (this.peek() !== ']') {
      if (this.i >= this.source.length) throw this.error(`unterminated class, expected ']'`);
      const from = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== '') {
        this.i++;
        const to = this.classAtom();
        if (typeof from !== 'string' || typeof to !== 'string')
          throw this.error('a range between class escapes');
        if (from > to) throw this.error(`the range ${from}-${to} is out of order`);
        members.push((c) => c >= from && c <= to);
      } else members.push(typeof from === 'string' ? (c) => c === from : from);
    }
    this.i++;
    const inSet = (c: string): boolean => members.some((member) => member(c));
    // Case folding before negation, as JavaScript's `i` flag: [^a-z] matches no letter.
    const test = (c: string): boolean => negated !== (inSet(c) || inSet(c.toUpperCase()));
    // ASCII looked up in a table, so a long class costs one step per character, not one per member.
    const ascii = Array.from({ length: 128 }, (_, code) => test(String.fromCharCode(code)));
    return (c) => {
      const code = c.charCodeAt(0);
      return code < 128 ? (ascii[code] as boolean) : test(c);
    };
  }

  /** One member of a class: a character, or a class escape's test. */
  private classAtom(): string | CharTest {
    const c = this.peek();
    if (c !== '\\') {
      this.i++;
      return c;
    }
    const letter = this.peek(1);
    if (letter === '') throw this.error('a trailing backslash');
    if (letter === 'b' || letter === 'B') throw this.error(`\\${letter} inside a class is not supported`);
    this.i += 2;
    return classEscape(letter) ?? this.escapedCharacter(letter);
  }

  private quantified(body: Node): Node {
    const bounds = this.quantifier();
    if (!bounds) return body;
    if (this.peek() === '?') this.i++; // lazy: the same yes/no answer
    if (startsQuantifier(this.peek())) throw this.error(`'${this.peek()}' with nothing to repeat`);
    return { kind: 'repeat', body, ...bounds };
  }

  private quantifier(): { min: number; max: number } | undefined {
    const c = this.peek();
    if (c === '*' || c === '+' || c === '?') {
      this.i++;
      return { min: c === '+' ? 1 : 0, max: c === '?' ? 1 : Infinity };
    }
    if (c !== '{') return undefined;
    const start = this.i;
    const malformed = (): PatternError => {
      this.i = start;
      return this.error(`'{' must start a quantifier {n}, {n,} or {n,m}`);
    };
    this.i++;
    if (!isDigit(this.peek())) throw malformed();
    const min = this.count();
    let max = min;
    if (this.peek() === ',') {
      this.i++;
      max = this.peek() === '}' ? Infinity : isDigit(this.peek()) ? this.count() : Infinity;
    }
    if (this.peek() !== '}') throw malformed();
    this.i++;
    if (max < min) throw this.error(`the quantifier {${min},${max}} is out of order`);
    return { min, max };
  }

  private count(): number {
    const start = this.i;
    while (isDigit(this.peek())) this.i++;
    const value = Number(this.source.slice(start, this.i));
    if (value > MAX_PATTERN_REPEAT) throw this.error(`a count over ${MAX_PATTERN_REPEAT}`);
    return value;
  }
}

/** The answer is lower-cased before matching, so a literal is compared lower-cased too. */
function literal(char: string): CharTest {
  const lower = char.toLowerCase();
  return (c) => c === lower;
}

// ---------------------------------------------------------------------------------------------
// The automaton

type Instruction =
  | { op: 'char'; test: CharTest; next: number }
  | { op: 'assert'; which: Assertion; next: number }
  | { op: 'split'; first: number; second: number }
  | { op: 'jump'; to: number }
  | { op: 'match' };

/** Builds the instruction list of a tree; quantifiers are expanded into copies of their body. */
class ProgramBuilder {
  private readonly program: Instruction[] = [];

  build(tree: Node): readonly Instruction[] {
    this.emit(tree);
    this.push({ op: 'match' });
    return this.program;
  }

  private push(instruction: Instruction): number {
    if (this.program.length >= MAX_PATTERN_STATES)
      throw new PatternError(`expands to more than ${MAX_PATTERN_STATES} states (lower the repeat counts)`);
    this.program.push(instruction);
    return this.program.length - 1;
  }

  /** Emits `node` so that control falls through to whatever is emitted next. */
  private emit(node: Node): void {
    switch (node.kind) {
      case 'char':
        this.push({ op: 'char', test: node.test, next: this.program.length + 1 });
        return;
      case 'assert':
        this.push({ op: 'assert', which: node.which, next: this.program.length + 1 });
        return;
      case 'seq':
        for (const item of node.items) this.emit(item);
        return;
      case 'alt':
        this.alternation(node.options);
        return;
      case 'repeat':
        this.repeat(node);
        return;
    }
  }

  private alternation(options: readonly Node[]): void {
    const jumps: number[] = [];
    options.forEach((option, index) => {
      if (index === options.length - 1) {
        this.emit(option);
        return;
      }
      const split = this.push({ op: 'split', first: 0, second: 0 });
      this.emit(option);
      jumps.push(this.push({ op: 'jump', to: 0 }));
      this.program[split] = { op: 'split', first: split + 1, second: this.program.length };
    });
    for (const jump of jumps) this.program[jump] = { op: 'jump', to: this.program.length };
  }

  private repeat(node: { body: Node; min: number; max: number }): void {
    for (let n = 0; n < node.min; n++) this.emit(node.body);
    if (node.max === Infinity) {
      const split = this.push({ op: 'split', first: 0, second: 0 });
      this.emit(node.body);
      this.push({ op: 'jump', to: split });
      this.program[split] = { op: 'split', first: split + 1, second: this.program.length };
      return;
    }
    // Each optional copy may be skipped to the end of all of them.
    const splits: number[] = [];
    for (let n = node.min; n < node.max; n++) {
      splits.push(this.push({ op: 'split', first: 0, second: 0 }));
      this.emit(node.body);
    }
    for (const split of splits)
      this.program[split] = { op: 'split', first: split + 1, second: this.program.length };
  }
}

/**
 * Whether `program` matches somewhere in `text`: every state reachable at each offset is
 * held once in a list (a state seen twice at one offset is skipped), so each character costs
 * at most one visit per state.
 */
function run(
  program: readonly Instruction[],
  text: string,
  stopAtMatch = true,
): { matched: boolean; visited: number } {
  const seen = new Int32Array(program.length).fill(-1);
  let current: number[] = [];
  let matched = false;
  let visited = 0;
  const stack: number[] = [];

  // Adds `pc` and every state reachable from it without reading a character, at `offset`.
  const add = (list: number[], pc: number, offset: number): void => {
    const before = text[offset - 1] ?? '';
    const after = text[offset] ?? '';
    stack.push(pc);
    while (stack.length > 0) {
      const at = stack.pop() as number;
      if (seen[at] === offset) continue;
      seen[at] = offset;
      visited++;
      const instruction = program[at] as Instruction;
      switch (instruction.op) {
        case 'char':
          list.push(at);
          break;
        case 'match':
          matched = true;
          break;
        case 'jump':
          stack.push(instruction.to);
          break;
        case 'split':
          stack.push(instruction.second, instruction.first);
          break;
        case 'assert':
          if (holds(instruction.which, before, after, offset, text.length)) stack.push(instruction.next);
          break;
      }
    }
  };

  add(current, 0, 0);
  for (let offset = 0; offset < text.length && !(matched && stopAtMatch); offset++) {
    const char = text[offset] as string;
    const next: number[] = [];
    for (const pc of current) {
      const instruction = program[pc] as Extract<Instruction, { op: 'char' }>;
      if (instruction.test(char)) add(next, instruction.next, offset + 1);
    }
    add(next, 0, offset + 1); // a search: a match may also start at the next offset
    current = next;
  }
  return { matched, visited };
}

function holds(which: Assertion, before: string, after: string, offset: number, length: number): boolean {
  switch (which) {
    case 'start':
      return offset === 0;
    case 'end':
      return offset === length;
    case 'word-boundary':
      return isWordChar(before) !== isWordChar(after);
    case 'not-word-boundary':
      return isWordChar(before) === isWordChar(after);
  }
}
