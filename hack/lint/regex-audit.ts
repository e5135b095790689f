/**
 * A static check that a regular expression cannot backtrack super-linearly in V8 (ReDoS),
 * run by core/parsers/linear-time.test.ts on every regex literal of the parsers. Test tooling,
 * so it lives in hack/ and never ships.
 *
 * How: the pattern is parsed, bounded repeats are unrolled, and its position (Glushkov)
 * automaton is built with parallel edges kept, because a backtracking engine explores every
 * path, not every state. An unanchored pattern gets a `[\s\S]*` loop in front: a search
 * retries at every start offset, which is exactly such a loop. Then the two classic
 * ambiguity tests (Weber & Seidl, as used by RXXR2, Rexploiter and recheck) decide:
 *
 * - exponential (EDA): some state can return to itself along two different paths reading the
 *   same word, as in `(a+)+`, `(a|a)*`, `(a*|b)*`;
 * - polynomial (IDA): two different loops p and q and one word that loops on p, leads from p
 *   to q and loops on q, as in `\s+$` (the search loop and `\s`), `\s*x?\s*`, `^(.+?)\s+:`.
 *
 * Neither means every path through the automaton on any input is counted by at most a
 * constant per character: the match (and a whole search) is linear in the subject's length.
 * The test is conservative on purpose: it ignores where a match could stop early, treats
 * `\b` and lookarounds as always true (their bodies are checked on their own) and a `^` that
 * is not the pattern's first term as always true. A pattern it cannot model (backreferences,
 * `\u`/`\x`/`\p` escapes, characters beyond Latin-1, the u/v flags) is reported unsupported
 * rather than passed.
 */

/** A parsed pattern. `atom` consumes one character; `end` is `$`, which no character passes. */
type Node =
  | { kind: 'atom'; source: string }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'alt'; options: Node[] }
  | { kind: 'repeat'; body: Node; min: number; max: number }
  | { kind: 'start' }
  | { kind: 'end' }
  | { kind: 'empty' };

/** The same after unrolling: every atom is a numbered position. */
type Expr =
  | { kind: 'pos'; id: number }
  | { kind: 'seq'; items: Expr[] }
  | { kind: 'alt'; options: Expr[] }
  | { kind: 'star'; body: Expr }
  | { kind: 'opt'; body: Expr }
  | { kind: 'eps' };

/** A pattern this checker cannot model; reported, never passed. */
class Unsupported extends Error {}

/** Positions the unrolling may create before the pattern is called unsupported. */
const MAX_POSITIONS = 4000;

/**
 * Characters that stand for every character: Latin-1, Unicode blanks and line ends, one CJK
 * letter. Printable ASCII comes first so that witnesses in messages are readable.
 */
const ALPHABET: readonly string[] = [
  ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)),
  ...Array.from({ length: 256 }, (_, code) => String.fromCharCode(code)).filter((c) => c < ' ' || c > '~'),
  ...[
    0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff, 0x0131, 0x017f, 0x212a, 0x4e2d,
  ].map((code) => String.fromCharCode(code)),
];

/** Characters with a meaning of their own outside a class, escaped when an atom is a literal. */
const SYNTAX_CHARACTERS = '^$\\.*+?()[]{}|/';

/** True when `char` is one of the characters of `set` (never for the empty string past the end). */
function oneOf(char: string, set: string): boolean {
  return char !== '' && set.includes(char);
}

/** A recursive-descent reader of the pattern syntax the parsers use. */
class PatternReader {
  private i = 0;
  /** Bodies of lookarounds, checked as patterns of their own. */
  readonly lookarounds: string[] = [];

  constructor(private readonly source: string) {}

  read(): Node {
    const node = this.disjunction();
    if (this.i < this.source.length)
      throw new Unsupported(`unexpected '${this.source[this.i]}' at ${this.i}`);
    return node;
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
    const c = this.peek();
    if (c === '^' || c === '$') {
      this.i++;
      return { kind: c === '^' ? 'start' : 'end' };
    }
    if (c === '\\' && (this.peek(1) === 'b' || this.peek(1) === 'B')) {
      this.i += 2;
      return { kind: 'empty' };
    }
    if (this.source.startsWith('(?=', this.i) || this.source.startsWith('(?!', this.i))
      return this.lookaround(3);
    if (this.source.startsWith('(?<=', this.i) || this.source.startsWith('(?<!', this.i))
      return this.lookaround(4);
    return this.quantified(this.atom());
  }

  private lookaround(prefix: number): Node {
    this.i += prefix;
    const start = this.i;
    this.disjunction();
    this.expect(')');
    this.lookarounds.push(this.source.slice(start, this.i - 1));
    if (oneOf(this.peek(), '*+?{')) throw new Unsupported('a quantified lookaround');
    return { kind: 'empty' };
  }

  private expect(char: string): void {
    if (this.peek() !== char) throw new Unsupported(`expected '${char}' at ${this.i}`);
    this.i++;
  }

  private atom(): Node {
    const c = this.peek();
    if (c === '(') return this.group();
    if (c === '[') return { kind: 'atom', source: this.characterClass() };
    if (c === '\\') return { kind: 'atom', source: this.escape() };
    if (c === '') throw new Unsupported('unexpected end of pattern');
    if (oneOf(c, '*+?{')) throw new Unsupported(`a quantifier '${c}' with nothing to repeat at ${this.i}`);
    this.i++;
    if (c === '.') return { kind: 'atom', source: '.' };
    return { kind: 'atom', source: SYNTAX_CHARACTERS.includes(c) ? `\\${c}` : c };
  }

  private group(): Node {
    this.i++;
    if (this.source.startsWith('?:', this.i)) this.i += 2;
    else if (this.source.startsWith('?<', this.i)) {
      const close = this.source.indexOf('>', this.i);
      if (close < 0) throw new Unsupported('an unterminated group name');
      this.i = close + 1;
    } else if (this.peek() === '?') throw new Unsupported(`the group kind '(?${this.peek(1)}'`);
    const body = this.disjunction();
    this.expect(')');
    return body;
  }

  private escape(): string {
    const e = this.peek(1);
    if (e === '') throw new Unsupported('a trailing backslash');
    if (/^[1-9]$/.test(e) || e === 'k') throw new Unsupported('a backreference');
    if (oneOf(e, 'xucpP')) throw new Unsupported(`the escape \\${e}`);
    this.i += 2;
    return `\\${e}`;
  }

  private characterClass(): string {
    const start = this.i;
    this.i++;
    if (this.peek() === '^') this.i++;
    if (this.peek() === ']') this.i++;
    while (this.i < this.source.length && this.peek() !== ']') {
      if (this.peek() === '\\') {
        if (oneOf(this.peek(1), 'xucpP')) throw new Unsupported(`the escape \\${this.peek(1)} in a class`);
        this.i++;
      }
      this.i++;
    }
    this.expect(']');
    return this.source.slice(start, this.i);
  }

  private quantified(atom: Node): Node {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === '*' || c === '+' || c === '?') {
      this.i++;
      [min, max] = c === '*' ? [0, Infinity] : c === '+' ? [1, Infinity] : [0, 1];
    } else if (c === '{') {
      const braces = /^\{(\d+)(?:(,)(\d*))?\}/.exec(this.source.slice(this.i, this.i + 20));
      if (!braces) throw new Unsupported(`a literal '{' at ${this.i}`);
      this.i += braces[0].length;
      min = Number(braces[1]);
      max = braces[2] === undefined ? min : braces[3] ? Number(braces[3]) : Infinity;
    } else return atom;
    if (this.peek() === '?') this.i++; // lazy: the same paths, tried in another order
    return { kind: 'repeat', body: atom, min, max };
  }
}

/** Unrolls repeats into positions, tracking each position's atom. */
class Unroller {
  readonly atoms: string[] = [];

  expr(node: Node): Expr {
    switch (node.kind) {
      case 'atom':
        return this.position(node.source);
      case 'end':
        // `$` is a position that no character can take: a path that reaches it stops there.
        return this.position('');
      case 'start':
      case 'empty':
        return { kind: 'eps' };
      case 'seq':
        return { kind: 'seq', items: node.items.map((item) => this.expr(item)) };
      case 'alt':
        return { kind: 'alt', options: node.options.map((option) => this.expr(option)) };
      case 'repeat':
        return this.repeat(node.body, node.min, node.max);
    }
  }

  position(source: string): Expr {
    if (this.atoms.length >= MAX_POSITIONS)
      throw new Unsupported('the pattern unrolls to too many positions');
    this.atoms.push(source);
    return { kind: 'pos', id: this.atoms.length - 1 };
  }

  /** `x{2,4}` becomes `x x (x (x)?)?`, `x{2,}` becomes `x x x*`: one fresh copy per repetition. */
  private repeat(body: Node, min: number, max: number): Expr {
    const items: Expr[] = [];
    for (let k = 0; k < min; k++) items.push(this.expr(body));
    if (max === Infinity) items.push({ kind: 'star', body: this.expr(body) });
    else {
      let tail: Expr | null = null;
      for (let k = min; k < max; k++) {
        const copy = this.expr(body);
        tail = { kind: 'opt', body: tail === null ? copy : { kind: 'seq', items: [copy, tail] } };
      }
      if (tail !== null) items.push(tail);
    }
    return { kind: 'seq', items };
  }
}

/** nullable/first/last of a subexpression; follow edges are appended to `follow` (parallel edges kept). */
interface Glushkov {
  nullable: boolean;
  first: number[];
  last: number[];
}

function glushkov(expr: Expr, follow: number[][]): Glushkov {
  switch (expr.kind) {
    case 'pos':
      return { nullable: false, first: [expr.id], last: [expr.id] };
    case 'eps':
      return { nullable: true, first: [], last: [] };
    case 'opt': {
      const inner = glushkov(expr.body, follow);
      return { ...inner, nullable: true };
    }
    case 'star': {
      const inner = glushkov(expr.body, follow);
      for (const l of inner.last) follow[l]?.push(...inner.first);
      return { ...inner, nullable: true };
    }
    case 'alt': {
      const parts = expr.options.map((option) => glushkov(option, follow));
      return {
        nullable: parts.some((p) => p.nullable),
        first: parts.flatMap((p) => p.first),
        last: parts.flatMap((p) => p.last),
      };
    }
    case 'seq': {
      let acc: Glushkov = { nullable: true, first: [], last: [] };
      for (const item of expr.items) {
        const next = glushkov(item, follow);
        for (const l of acc.last) follow[l]?.push(...next.first);
        acc = {
          nullable: acc.nullable && next.nullable,
          first: acc.nullable ? [...acc.first, ...next.first] : acc.first,
          last: next.nullable ? [...acc.last, ...next.last] : next.last,
        };
      }
      return acc;
    }
  }
}

/** True when every match must begin at the subject's start (`^…`, `^a|^b`, or the y flag). */
function anchoredAtStart(node: Node): boolean {
  if (node.kind === 'start') return true;
  if (node.kind === 'seq') return node.items[0] !== undefined && anchoredAtStart(node.items[0]);
  if (node.kind === 'alt') return node.options.every(anchoredAtStart);
  return false;
}

/** The automaton: state 0 is the initial state, state s+1 is position s. */
interface Automaton {
  /** Labels of states for messages (the atom's source). */
  labels: string[];
  /** `edges[state][letter]`: target states, a target twice for two distinct paths. */
  edges: number[][][];
  /** One character per letter (an equivalence class of characters). */
  letters: string[];
}

function buildAutomaton(source: string, flags: string): { automaton: Automaton; lookarounds: string[] } {
  const reader = new PatternReader(source);
  const tree = reader.read();
  const unroller = new Unroller();
  let expr = unroller.expr(tree);
  const searches = !flags.includes('y') && (flags.includes('m') || !anchoredAtStart(tree));
  if (searches) expr = { kind: 'seq', items: [{ kind: 'star', body: unroller.position('[\\s\\S]') }, expr] };
  const atoms = unroller.atoms;
  const follow: number[][] = atoms.map(() => []);
  const { first } = glushkov(expr, follow);
  const testFlags = [...flags].filter((f) => f === 'i' || f === 's').join('');
  const tests = atoms.map((atom) => (atom === '' ? null : new RegExp(`^(?:${atom})$`, testFlags)));
  // Characters that every atom treats alike are one letter of the automaton's alphabet.
  const letterOf = new Map<string, string>();
  for (const char of ALPHABET) {
    const signature = tests.map((test) => (test?.test(char) ? '1' : '0')).join('');
    if (!letterOf.has(signature)) letterOf.set(signature, char);
  }
  const letters = [...letterOf.values()];
  const matches = atoms.map((_, p) => letters.map((char) => tests[p]?.test(char) ?? false));
  const targets = (positions: readonly number[]): number[][] =>
    letters.map((_, k) => positions.filter((p) => matches[p]?.[k]).map((p) => p + 1));
  return {
    automaton: {
      labels: ['(start)', ...atoms.map((atom) => atom || '$')],
      edges: [targets(first), ...follow.map(targets)],
      letters,
    },
    lookarounds: reader.lookarounds,
  };
}

/** Strongly connected components (iterative Tarjan) of a graph given as successor lists. */
function components(count: number, successors: (node: number) => readonly number[]): number[] {
  const index = new Array<number>(count).fill(-1);
  const low = new Array<number>(count).fill(0);
  const component = new Array<number>(count).fill(-1);
  const onStack = new Array<boolean>(count).fill(false);
  const stack: number[] = [];
  let counter = 0;
  let found = 0;
  for (let root = 0; root < count; root++) {
    if (index[root] !== -1) continue;
    const work: Array<{ node: number; next: number }> = [{ node: root, next: 0 }];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: number; next: number };
      const succ = successors(frame.node);
      if (frame.next < succ.length) {
        const w = succ[frame.next++] as number;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = true;
          work.push({ node: w, next: 0 });
        } else if (onStack[w]) low[frame.node] = Math.min(low[frame.node] as number, index[w] as number);
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low[parent.node] = Math.min(low[parent.node] as number, low[frame.node] as number);
      if (low[frame.node] === index[frame.node]) {
        let w: number;
        do {
          w = stack.pop() as number;
          onStack[w] = false;
          component[w] = found;
        } while (w !== frame.node);
        found++;
      }
    }
  }
  return component;
}

/** Breadth-first search over tuples of states that read the same letters; returns the word read. */
function findWord(
  automaton: Automaton,
  from: readonly number[],
  to: readonly number[],
  limit = 200_000,
): string | null {
  const key = (tuple: readonly number[]): string => tuple.join(',');
  const goal = key(to);
  const seen = new Map<string, { parent: string | null; letter: number }>();
  const queue: number[][] = [];
  // Start from the successors so that the word is never empty.
  const expand = (tuple: readonly number[], parent: string | null): void => {
    automaton.letters.forEach((_, k) => {
      const choices = tuple.map((s) => automaton.edges[s]?.[k] ?? []);
      for (const next of product(choices)) {
        const id = key(next);
        if (seen.has(id)) continue;
        seen.set(id, { parent, letter: k });
        queue.push(next);
      }
    });
  };
  expand(from, null);
  for (let head = 0; head < queue.length && seen.size < limit; head++) {
    const tuple = queue[head] as number[];
    const id = key(tuple);
    if (id === goal) {
      let word = '';
      for (let at: string | null = id; at !== null; at = seen.get(at)?.parent ?? null)
        word = (automaton.letters[seen.get(at)?.letter ?? 0] ?? '') + word;
      return word;
    }
    expand(tuple, id);
  }
  if (seen.size >= limit) throw new Unsupported('the ambiguity search grew too large');
  return null;
}

/** Every combination of one element from each list (distinct target states only). */
function product(lists: ReadonlyArray<readonly number[]>): number[][] {
  let out: number[][] = [[]];
  for (const list of lists) out = out.flatMap((prefix) => [...new Set(list)].map((x) => [...prefix, x]));
  return out;
}

/** An exponential ambiguity: a state with two paths back to itself on one word. */
function exponential(automaton: Automaton, component: readonly number[]): string | null {
  const n = automaton.edges.length;
  // A parallel edge inside a cycle: `(a*)*` repeats the same atom by two routes.
  for (let s = 0; s < n; s++)
    for (const [k, targets] of (automaton.edges[s] ?? []).entries()) {
      const twice = targets.find((t, i) => targets.indexOf(t) !== i);
      if (twice !== undefined && component[twice] === component[s])
        return `two routes repeat \`${automaton.labels[twice]}\` on ${JSON.stringify(automaton.letters[k])}`;
    }
  // Otherwise: in the automaton of pairs of states reading the same word, one strongly
  // connected component holds both a pair (p, p) and a pair (x, y) with x ≠ y.
  const pair = (x: number, y: number): number => x * n + y;
  const pairSuccessors = (id: number): number[] => {
    const x = Math.floor(id / n);
    const y = id % n;
    const out = new Set<number>();
    automaton.letters.forEach((_, k) => {
      for (const a of automaton.edges[x]?.[k] ?? [])
        for (const b of automaton.edges[y]?.[k] ?? []) out.add(pair(a, b));
    });
    return [...out];
  };
  const pairComponent = components(n * n, pairSuccessors);
  for (let p = 0; p < n; p++) {
    const diagonal = pairComponent[pair(p, p)];
    for (let x = 0; x < n; x++)
      for (let y = 0; y < n; y++) {
        if (x === y || pairComponent[pair(x, y)] !== diagonal) continue;
        const there = findWord(automaton, [p, p], [x, y]) ?? '';
        const back = findWord(automaton, [x, y], [p, p]) ?? '';
        return `\`${automaton.labels[p]}\` returns to itself by two paths reading ${JSON.stringify(there + back)}`;
      }
  }
  return null;
}

/** A polynomial ambiguity: loops p ≠ q and a word looping on p, leading p→q and looping on q. */
function polynomial(automaton: Automaton, component: readonly number[]): string | null {
  const n = automaton.edges.length;
  const looping = (s: number): boolean =>
    (automaton.edges[s] ?? []).some((targets) => targets.some((t) => component[t] === component[s]));
  const reach = (from: number): Set<number> => {
    const seen = new Set([from]);
    const stack = [from];
    while (stack.length > 0) {
      const s = stack.pop() as number;
      for (const targets of automaton.edges[s] ?? [])
        for (const t of targets)
          if (!seen.has(t)) {
            seen.add(t);
            stack.push(t);
          }
    }
    return seen;
  };
  for (let p = 0; p < n; p++) {
    if (!looping(p)) continue;
    for (const q of reach(p)) {
      if (q === p || !looping(q) || component[q] === component[p]) continue;
      const word = findWord(automaton, [p, p, q], [p, q, q]);
      if (word !== null)
        return `\`${automaton.labels[p]}\` and \`${automaton.labels[q]}\` both take ${JSON.stringify(word)}: every extra character is retried by both loops`;
    }
  }
  return null;
}

/**
 * Audits one pattern. Returns null when it backtracks at most linearly, else one line saying
 * why not: `exponential: …`, `polynomial: …` or `unsupported: …`.
 */
export function auditRegex(source: string, flags = ''): string | null {
  try {
    if (flags.includes('u') || flags.includes('v')) throw new Unsupported('the u and v flags');
    if ([...source].some((char) => (char.codePointAt(0) ?? 0) > 0xff))
      throw new Unsupported('characters beyond Latin-1');
    const { automaton, lookarounds } = buildAutomaton(source, flags);
    const component = components(automaton.edges.length, (s) => [
      ...new Set((automaton.edges[s] ?? []).flat()),
    ]);
    const exp = exponential(automaton, component);
    if (exp !== null) return `exponential: ${exp}`;
    const poly = polynomial(automaton, component);
    if (poly !== null) return `polynomial: ${poly}`;
    for (const body of lookarounds) {
      const inner = auditRegex(`^(?:${body})`, flags.replace(/[gy]/g, ''));
      if (inner !== null) return `in the lookaround (?…${body}): ${inner}`;
    }
    return null;
  } catch (error) {
    if (error instanceof Unsupported) return `unsupported: ${error.message}`;
    throw error;
  }
}
