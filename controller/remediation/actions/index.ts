/**
 * Self-healing's actions, one handler per kind of decision (decide.ts's Action): the one door
 * into controller/remediation/actions/. The executor (execute.ts) fences, backs off and counts
 * failures around them; each handler re-reads the Node and writes only if its record is still
 * the one the decision saw.
 */
import type { ActingKind, ActionHandler } from './context.js';
import { cordon } from './cordon.js';
import { drain } from './drain.js';
import { forget } from './forget.js';
import { record } from './record.js';
import { uncordon } from './uncordon.js';

export type { ActingKind, ActionContext, ActionHandler, ActionOf } from './context.js';

/** The handler of each kind of action. */
export const ACTION_HANDLERS: { readonly [K in ActingKind]: ActionHandler<K> } = {
  cordon,
  record,
  uncordon,
  forget,
  drain,
};
