/** What the families' inventory completions share. */

/** The smallest number not in `taken`, at or above `from`; it is then taken. */
export function freeNumber(taken: Set<number>, from: number): number {
  let n = from;
  while (taken.has(n)) n++;
  taken.add(n);
  return n;
}
