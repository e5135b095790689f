/**
 * When remediation passes run: every `intervalMs`, and soon after a wake (a device failed or
 * recovered, a Node changed, a drain ended), but woken passes start at most every
 * MIN_GAP_MS: a storm of Node changes and transitions must not become back-to-back passes
 * (each reads the breaker and re-reads Nodes).
 */
import type { Clock } from '../../platform/index.js';
import type { RemediationConfig } from './config.js';

/** The shortest time between the starts of two passes when woken. */
const MIN_GAP_MS = 200;

/** What the loop runs. */
export interface PassLoopDeps {
  clock: Clock;
  /** The settings in force (read before every pass). */
  config(): RemediationConfig;
  /** One pass under `config`; never rejects. */
  pass(config: RemediationConfig, signal: AbortSignal): Promise<void>;
  /** Called when the loop ends, before those waiting for a pass are released. */
  onStop(): void;
}

/** The loop of one term. */
export interface PassLoop {
  /** Run a pass soon. */
  wake(): void;
  /** Resolves after the next complete pass (or when the loop ends). */
  nextPass(): Promise<void>;
  /** Runs passes until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/** Creates the loop. */
export function createPassLoop(deps: PassLoopDeps): PassLoop {
  const { clock } = deps;
  let wake: (() => void) | undefined;
  let woken = false;
  let passWaiters: (() => void)[] = [];

  return {
    wake() {
      woken = true;
      wake?.();
    },
    nextPass: () => new Promise<void>((resolve) => passWaiters.push(resolve)),
    async run(signal) {
      const onAbort = (): void => wake?.();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        while (!signal.aborted) {
          const config = deps.config();
          woken = false;
          const startedAt = clock.now();
          await deps.pass(config, signal);
          const waiters = passWaiters;
          passWaiters = [];
          for (const resolve of waiters) resolve();
          if (signal.aborted) continue;
          const gap = Math.min(MIN_GAP_MS, config.intervalMs);
          const wait = woken ? Math.max(0, startedAt + gap - clock.now()) : config.intervalMs;
          if (wait === 0) continue;
          const inGap = woken;
          await new Promise<void>((resolve) => {
            const cancel = clock.schedule(wait, () => resolve());
            // A wake cuts the interval short, not the gap (the pass after it is due anyway).
            wake = () => {
              if (inGap && !signal.aborted) return;
              cancel();
              resolve();
            };
          });
          wake = undefined;
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        deps.onStop();
        for (const resolve of passWaiters) resolve();
        passWaiters = [];
      }
    },
  };
}
