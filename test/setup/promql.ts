/** The metric names PromQL expressions select, for the checks that every name is real. */

/** PromQL functions, aggregations and keywords the queries may use. */
const PROMQL_FUNCTIONS = new Set(
  'absent avg count histogram_quantile increase irate max min rate sort_desc sum time timestamp vector'.split(
    ' ',
  ),
);
const PROMQL_KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers,
 * ranges, grouping clauses, functions, keywords and numbers are taken out. Throws on a
 * function outside PROMQL_FUNCTIONS (a typo would otherwise read as a metric).
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const match of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?/g)) {
    const identifier = match[0].replace(/\s*\($/, '');
    if (PROMQL_KEYWORDS.has(identifier.toLowerCase())) continue;
    if (match[1] !== undefined) {
      if (!PROMQL_FUNCTIONS.has(identifier))
        throw new Error(`unknown PromQL function ${identifier} in: ${expr}`);
    } else {
      names.push(identifier);
    }
  }
  return names;
}
