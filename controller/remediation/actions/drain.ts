/** `drain`: records `draining` (unless resuming one) and starts the drain in the background. */
import type { ActionHandler } from './context.js';

export const drain: ActionHandler<'drain'> = async (action, context) => {
  const { records, drains, signal } = context;
  if (drains.has(action.node)) return;
  // Re-read even to resume: the cache may still say `draining` for a drain that just ended.
  const state = await records.unchanged(action.node, context.expected, signal);
  if (!state || !context.leading()) return context.count('drain', 'stale');
  if (!action.resume)
    await records.write(action.node, state.resourceVersion, { record: action.record }, signal);
  context.count('drain', 'ok');
  drains.start(action.node, action.record, context.config, signal);
};
