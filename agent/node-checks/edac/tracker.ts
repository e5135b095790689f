/**
 * Host memory ECC from the EDAC counters: pure, fed one read at a time with its time.
 *
 * - Baseline: the counts of the first read that finds memory controllers are history, errors
 *   from before the agent started (since the EDAC driver loaded, usually the boot); they are
 *   reported once as an event, never as a problem. A restarted agent therefore forgets an
 *   uncorrectable error counted before it started.
 * - Uncorrectable: any increase of a controller's ue_count is a problem for `holdMs` after
 *   it was counted. An uncorrectable error the node survived (the kernel poisoned the page and
 *   killed what used it) still means the DIMM is failing: the node should be looked at.
 * - Correctable: a controller whose ce_count rose by `correctablePerHour` or more within the
 *   last hour is a problem while it does: a storm, not the background rate that large fleets
 *   see on many healthy DIMMs (those are for the metric and a replacement policy).
 * - A count smaller than the last (the driver reloaded, counting from 0) starts again: what it
 *   holds now was counted since the reload, after the baseline, so it is new.
 * - A controller that appears after the baseline (a driver loaded later, memory hot-added)
 *   counts its errors as new; one that disappears keeps its last counts, so its return is
 *   compared with them (a failed listing is no reset).
 * - A count that cannot be read leaves the last one in place.
 *
 * Messages name the controller and, where the driver gives them, the DIMMs whose counts rose.
 */
import type { NodeProblem } from '../check.js';
import { joinProblemParts, plural } from '../problem-message.js';
import type { ControllerReading, EdacReading } from './sysfs.js';

const HOUR_MS = 3_600_000;

/** What the tracker is told once. */
export interface EdacTrackerOptions {
  readonly correctablePerHour: number;
  readonly holdMs: number;
}

/** What happened, for the logs. */
export interface EdacEvent {
  readonly what:
    | 'available'
    | 'unavailable'
    | 'history'
    | 'reset'
    | 'appeared'
    | 'disappeared'
    | 'uncorrectable'
    | 'correctable-storm'
    | 'correctable-calm';
  readonly controller?: string;
  readonly detail?: string;
}

/** A read's outcome. */
export interface EdacVerdict {
  readonly problems: readonly NodeProblem[];
  readonly events: readonly EdacEvent[];
  /** Errors first counted by this read (after the baseline), for the metric. */
  readonly newErrors: { readonly correctable: number; readonly uncorrectable: number };
  /** Whether EDAC was found, as last read (undefined before the first successful read). */
  readonly available: boolean | undefined;
  /** Memory controllers known. */
  readonly controllers: number;
}

interface Counts {
  ce: number | undefined;
  ue: number | undefined;
}

interface ControllerState extends Counts {
  present: boolean;
  dimms: Map<string, Counts>;
}

interface ErrorSpell {
  readonly at: number;
  readonly controller: string;
  readonly count: number;
  readonly dimms: readonly string[];
}

/** How far a count rose: the difference, or (after a reset to a smaller count) the count itself. */
function rise(now: number | undefined, last: number | undefined): { by: number; reset: boolean } {
  if (now === undefined || last === undefined) return { by: 0, reset: false };
  return now >= last ? { by: now - last, reset: false } : { by: now, reset: true };
}

/** `2026-01-01T00:00:00Z` */
function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** See the file comment. */
export class EdacTracker {
  readonly #options: EdacTrackerOptions;
  readonly #controllers = new Map<string, ControllerState>();
  #baselined = false;
  #available: boolean | undefined;
  #uncorrectable: ErrorSpell[] = [];
  #correctable: ErrorSpell[] = [];
  #storming = new Set<string>();

  constructor(options: EdacTrackerOptions) {
    this.#options = options;
  }

  /** Takes one read at `now`; undefined: the read failed, and only time moves. */
  update(now: number, reading: EdacReading | undefined): EdacVerdict {
    const events: EdacEvent[] = [];
    const newErrors = { correctable: 0, uncorrectable: 0 };
    if (reading !== undefined) {
      if (reading.available !== this.#available)
        events.push({ what: reading.available ? 'available' : 'unavailable' });
      this.#available = reading.available;
      if (reading.available) {
        const listed = new Set<string>();
        for (const controller of reading.controllers) {
          listed.add(controller.name);
          this.#take(now, controller, events, newErrors);
        }
        for (const [name, state] of this.#controllers) {
          if (listed.has(name) || !state.present) continue;
          state.present = false;
          events.push({ what: 'disappeared', controller: name });
        }
        this.#baselined ||= reading.controllers.length > 0;
      }
    }
    this.#uncorrectable = this.#uncorrectable.filter((spell) => spell.at > now - this.#options.holdMs);
    this.#correctable = this.#correctable.filter((spell) => spell.at > now - HOUR_MS);
    return {
      problems: this.#judge(events),
      events,
      newErrors,
      available: this.#available,
      controllers: this.#controllers.size,
    };
  }

  #take(
    now: number,
    reading: ControllerReading,
    events: EdacEvent[],
    newErrors: { correctable: number; uncorrectable: number },
  ): void {
    const { name } = reading;
    let state = this.#controllers.get(name);
    if (state === undefined) {
      const zero = { ce: 0, ue: 0 };
      state = { ce: undefined, ue: undefined, present: false, dimms: new Map() };
      this.#controllers.set(name, state);
      if (!this.#baselined) {
        // History: taken as the baseline as it is.
        Object.assign(state, { ce: reading.ce, ue: reading.ue });
        for (const dimm of reading.dimms) state.dimms.set(dimm.name, { ce: dimm.ce, ue: dimm.ue });
        state.present = true;
        if ((reading.ce ?? 0) > 0 || (reading.ue ?? 0) > 0)
          events.push({
            what: 'history',
            controller: name,
            detail: `${reading.ce ?? '?'} correctable, ${reading.ue ?? '?'} uncorrectable before the agent started`,
          });
        return;
      }
      // Appeared after the baseline: everything it counted is new.
      Object.assign(state, zero);
      events.push({ what: 'appeared', controller: name });
    } else if (!state.present) {
      events.push({ what: 'appeared', controller: name, detail: 'back' });
    }
    state.present = true;
    const ce = rise(reading.ce, state.ce);
    const ue = rise(reading.ue, state.ue);
    if (ce.reset || ue.reset)
      events.push({ what: 'reset', controller: name, detail: 'counts went back: the EDAC driver reloaded' });
    const rose = (kind: 'ce' | 'ue', reset: boolean): string[] =>
      reading.dimms.flatMap((dimm) => {
        const last = reset
          ? 0
          : (state.dimms.get(dimm.name)?.[kind] ?? (state[kind] === undefined ? undefined : 0));
        return rise(dimm[kind], last).by > 0 ? [dimm.label] : [];
      });
    if (ue.by > 0) {
      const dimms = rose('ue', ue.reset);
      this.#uncorrectable.push({ at: now, controller: name, count: ue.by, dimms });
      newErrors.uncorrectable += ue.by;
      events.push({
        what: 'uncorrectable',
        controller: name,
        detail: `${ue.by} (${dimms.join(', ') || 'no DIMM named'})`,
      });
    }
    if (ce.by > 0) {
      this.#correctable.push({ at: now, controller: name, count: ce.by, dimms: rose('ce', ce.reset) });
      newErrors.correctable += ce.by;
    }
    if (reading.ce !== undefined) state.ce = reading.ce;
    if (reading.ue !== undefined) state.ue = reading.ue;
    for (const dimm of reading.dimms) {
      const last = state.dimms.get(dimm.name) ?? { ce: undefined, ue: undefined };
      state.dimms.set(dimm.name, { ce: dimm.ce ?? last.ce, ue: dimm.ue ?? last.ue });
    }
  }

  #judge(events: EdacEvent[]): NodeProblem[] {
    const parts: string[] = [];
    for (const [controller, spells] of group(this.#uncorrectable)) {
      const count = spells.reduce((sum, s) => sum + s.count, 0);
      const last = Math.max(...spells.map((s) => s.at));
      const dimms = [...new Set(spells.flatMap((s) => s.dimms))];
      parts.push(
        `${controller}: ${plural(count, 'uncorrectable error')}, last at ${isoSeconds(last)}${dimms.length ? ` (${dimms.join(', ')})` : ''}`,
      );
    }
    const storming = new Set<string>();
    for (const [controller, spells] of group(this.#correctable)) {
      const count = spells.reduce((sum, s) => sum + s.count, 0);
      if (count < this.#options.correctablePerHour) continue;
      storming.add(controller);
      const dimms = [...new Set(spells.flatMap((s) => s.dimms))];
      parts.push(
        `${controller}: ${plural(count, 'correctable error')} in the last hour${dimms.length ? ` (${dimms.join(', ')})` : ''}`,
      );
    }
    for (const controller of storming)
      if (!this.#storming.has(controller)) events.push({ what: 'correctable-storm', controller });
    for (const controller of this.#storming)
      if (!storming.has(controller)) events.push({ what: 'correctable-calm', controller });
    this.#storming = storming;
    return parts.length === 0 ? [] : [{ reason: 'host-memory-ecc', message: joinProblemParts(parts) }];
  }
}

/** Spells by controller, controllers in name order (`mc2` before `mc10`). */
function group(spells: readonly ErrorSpell[]): [string, ErrorSpell[]][] {
  const by = new Map<string, ErrorSpell[]>();
  for (const spell of spells) {
    const list = by.get(spell.controller) ?? [];
    list.push(spell);
    by.set(spell.controller, list);
  }
  return [...by].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
}
