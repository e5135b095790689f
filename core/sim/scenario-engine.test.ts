import { describe, expect, it } from '@jest/globals';
import { publishedDocumentSchema } from '../../contracts/index.js';
import { createEngine, type Transition } from '../engine/index.js';
import { checkLabels, playScenario } from './run.js';
import { demoScenario } from './scenario.js';

// The scenario's labels are the engine's acceptance test: every device of the fleet must
// end where its label says, through the labelled transitions, for any seed.
describe('the detection engine on the demo scenario', () => {
  it.each([7, 1, 2, 99])('behaves as labelled with seed %i', (seed) => {
    const scenario = demoScenario({ seed });
    const engine = createEngine();
    engine.setKnownNodes(scenario.fleet.map((n) => n.name));
    const transitions: Transition[] = [];
    let dropped = 0;
    let now = scenario.start;
    for (const step of playScenario(engine, scenario)) {
      transitions.push(...step.transitions);
      dropped += step.dropped;
      now = step.now;
    }
    const document = engine.document(now, { identity: 'test', term: 1 });
    expect(checkLabels(scenario, transitions, document)).toEqual([]);
    expect(dropped).toBe(0);
    expect(publishedDocumentSchema.safeParse(document).success).toBe(true);
    expect(document.cluster_summary).toEqual({
      total: 136,
      healthy: 130,
      degraded: 0,
      failed: 6,
      unknown: 0,
    });
  });
});
