/**
 * A check's rounds that never reject, as NodeCheck.run promises: a round that throws (not
 * expected: each read is caught where it is made) is logged once per failing spell, and the
 * last problems stand.
 */
import type { NodeProblem } from './check.js';
import type { FailureSpells } from './failure-spells.js';

/** Runs a round; undefined from it: nothing new (a stop), the last problems stand. */
export type Round = () => Promise<readonly NodeProblem[] | undefined>;

/** A runner of `check`'s rounds that answers the last problems when one fails. */
export function lastingProblems(
  check: string,
  spells: FailureSpells,
): (round: Round) => Promise<readonly NodeProblem[]> {
  let last: readonly NodeProblem[] = [];
  return async (round) => {
    try {
      const problems = await round();
      if (problems !== undefined) last = problems;
      spells.succeed('round', `${check}: rounds succeed again`);
    } catch (error) {
      spells.fail(
        'round',
        { error: (error as Error).message },
        `${check}: a round failed; the last problems stand`,
      );
    }
    return last;
  };
}
