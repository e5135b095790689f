/**
 * The build context `docker build .` sends: the files under the context folder that
 * .dockerignore leaves in. Docker's rules (moby/patternmatcher), not .gitignore's: each
 * pattern is anchored at the context's root (`test` is /test, never cli/test; `*.log` only
 * at the root), `*` and `?` stop at `/`, `**` spans folders, a pattern that matches a folder
 * excludes everything under it, `!` re-includes, and the last matching line wins.
 */
import { readdirSync } from 'node:fs';
import { join, posix } from 'node:path';

/** One line of a .dockerignore file. */
interface DockerIgnoreRule {
  /** The pattern as cleaned (no leading `/`, no `!`). */
  pattern: string;
  regex: RegExp;
  /** The pattern's number of path components: a folder that deep or less can match it. */
  depth: number;
  /** `!pattern`: re-includes what earlier lines excluded. */
  exclusion: boolean;
}

/** The regular expression of one pattern (moby/patternmatcher's translation). */
function patternRegex(pattern: string): RegExp {
  let out = '^';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        i++;
        // `**/` is `**`; at the end it takes everything, elsewhere any number of folders (even none).
        if (pattern[i + 1] === '/') i++;
        out += i + 1 >= pattern.length ? '.*' : '(.*/)?';
      } else out += '[^/]*';
    } else if (ch === '?') out += '[^/]';
    else if (ch === '\\' && i + 1 < pattern.length) out += `\\${pattern[++i] as string}`;
    else if (ch === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) throw new Error(`.dockerignore: unterminated '[' in ${pattern}`);
      const body = pattern.slice(i + 1, end).replace(/^!/, '^');
      out += `[${body}]`;
      i = end;
    } else out += /[.+^${}()|\]\\]/.test(ch) ? `\\${ch}` : ch;
  }
  return new RegExp(`${out}$`);
}

/** The rules of a .dockerignore file's text. */
export function parseDockerIgnore(text: string): DockerIgnoreRule[] {
  const rules: DockerIgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const exclusion = line.startsWith('!');
    if (exclusion) line = line.slice(1).trim();
    // Docker cleans each pattern as a path (filepath.Clean) and drops a leading `/`.
    const pattern = posix.normalize(line).replace(/^\/+/, '').replace(/\/+$/, '');
    if (pattern === '' || pattern === '.') continue;
    rules.push({ pattern, regex: patternRegex(pattern), depth: pattern.split('/').length, exclusion });
  }
  return rules;
}

/**
 * Whether `path` (relative to the context, `/`-separated) is left out. A line matches the path
 * itself or one of its parent folders, so an excluded folder takes its contents along.
 */
export function isIgnored(rules: readonly DockerIgnoreRule[], path: string): boolean {
  const parts = path.split('/');
  let ignored = false;
  for (const rule of rules) {
    let matched = rule.regex.test(path);
    for (let n = 1; !matched && n < parts.length; n++) matched = rule.regex.test(parts.slice(0, n).join('/'));
    if (matched) ignored = !rule.exclusion;
  }
  return ignored;
}

/**
 * Every file of the build context under `root` (paths relative to it, `/`-separated, sorted).
 * An ignored folder is not walked unless a `!` line could bring something under it back.
 */
export function contextFiles(root: string, rules: readonly DockerIgnoreRule[]): string[] {
  // As Docker does: a `!` line with a wildcard could match anywhere; a literal one only under its own folders.
  const mayReinclude = (dir: string): boolean =>
    rules.some(
      (rule) => rule.exclusion && (/[*?[\\]/.test(rule.pattern) || rule.pattern.startsWith(`${dir}/`)),
    );
  const files: string[] = [];
  const walk = (relativeDir: string): void => {
    for (const entry of readdirSync(join(root, relativeDir), { withFileTypes: true })) {
      const path = relativeDir === '' ? entry.name : `${relativeDir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (isIgnored(rules, path) && !mayReinclude(path)) continue;
        walk(path);
      } else if (!isIgnored(rules, path)) files.push(path);
    }
  };
  walk('');
  return files.sort();
}
