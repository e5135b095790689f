/**
 * The `sim` collector: a simulated node of a chosen kind whose readings come from the same
 * simulator as the demo and the benchmarks (core/sim), with the faults of its fault board.
 * `tool-hang` makes a reading wait until the probe gives up; `garbage` makes the reading
 * fail the way unreadable tool output does (through the real parser).
 */
import type { Payload } from '../../contracts/index.js';
import { parseToolOutput } from '../../core/parsers/index.js';
import { createLiveNode, type SimNode } from '../../core/sim/index.js';
import type { Clock } from '../../platform/index.js';
import type { Collector } from '../collectors/index.js';
import type { FaultBoard } from './faults.js';

/** Something that looks like a tool's output and is not. */
const GARBAGE = '\u0000\u0007Segmentation fault (core dumped)\n';

/** Builds the collector; `start` is second 0 of the board's timeline (epoch ms). */
export function createSimCollector(
  node: SimNode,
  board: FaultBoard,
  options: { seed: string; start: number },
  deps: { clock: Clock },
): Collector {
  const live = createLiveNode(node, { seed: options.seed, start: options.start });
  /** The simulator steps whole seconds: every second is stepped once, in order. */
  let stepped = -1;
  let last: Payload | null = null;
  const readAt = (now: number): Payload | null => {
    const second = Math.floor((now - options.start) / 1000);
    const faults = board.timeline();
    for (let s = Math.max(stepped + 1, second - 60); s <= second; s++) {
      last = live.sample(options.start + s * 1000, faults);
    }
    stepped = Math.max(stepped, second);
    return last;
  };
  return {
    name: 'sim',
    family: node.family,
    async collect(signal: AbortSignal): Promise<Payload> {
      const now = deps.clock.now();
      if (board.active('tool-hang', now)) {
        await new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason as Error);
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        });
      }
      if (board.active('garbage', now)) {
        parseToolOutput('hdc', GARBAGE, {
          node: node.name,
          collectedAt: new Date(now).toISOString(),
          seq: 0,
          bootId: '',
          collector: 'sim',
        });
      }
      const payload = readAt(now);
      if (payload === null) throw new Error('the simulated tool printed nothing');
      return structuredClone(payload);
    },
  };
}
