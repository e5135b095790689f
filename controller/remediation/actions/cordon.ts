/** `cordon`: marks the node unschedulable, adds our taint if asked, and writes the new record. */
import { nodeObject, type ActionHandler } from './context.js';
import { hasTaint, withTaint } from './taints.js';

export const cordon: ActionHandler<'cordon'> = async (action, context) => {
  const { records, clock, signal } = context;
  const state = await records.unchanged(action.node, context.expected, signal);
  // Cordoned by someone else meanwhile: not ours to touch.
  if (!state || state.unschedulable) return context.count('cordon', 'stale');
  // `tainted` records whether we added the taint: one already there is not ours to remove.
  const adding = action.record.tainted && !hasTaint(state.taints);
  const taints = adding ? withTaint(state.taints, clock.now()) : state.taints;
  const record = { ...action.record, tainted: adding };
  if (!context.leading()) return;
  await records.write(action.node, state.resourceVersion, { unschedulable: true, taints, record }, signal);
  context.count('cordon', 'ok');
  context.succeeded(action.node);
  context.log.warn({ node: action.node, reason: action.record.reason }, 'cordoned');
  context.events.record(
    nodeObject(action.node),
    'Warning',
    'NodeCordoned',
    `cordoned by npu-fault: ${action.record.reason}`,
  );
};
