/** `forget`: the cooldown is over: the record goes, and the node is no longer ours. */
import type { ActionHandler } from './context.js';

export const forget: ActionHandler<'forget'> = async (action, context) => {
  const { records, signal } = context;
  const state = await records.unchanged(action.node, context.expected, signal);
  if (!state || !context.leading()) return context.count('forget', 'stale');
  await records.write(action.node, state.resourceVersion, { record: null }, signal);
  context.count('forget', 'ok');
};
