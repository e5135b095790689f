/** `uncordon`: the node recovered and held: schedulable again, our taint gone, the record released. */
import { nodeObject, type ActionHandler } from './context.js';
import { withoutTaint } from './taints.js';

export const uncordon: ActionHandler<'uncordon'> = async (action, context) => {
  const { records, signal } = context;
  const state = await records.unchanged(action.node, context.expected, signal);
  if (!state || !context.leading()) return context.count('uncordon', 'stale');
  const taints = action.record.tainted ? withoutTaint(state.taints) : state.taints;
  await records.write(
    action.node,
    state.resourceVersion,
    { unschedulable: false, taints, record: action.record },
    signal,
  );
  context.count('uncordon', 'ok');
  context.log.info({ node: action.node }, 'uncordoned after recovery');
  context.events.record(
    nodeObject(action.node),
    'Normal',
    'NodeUncordoned',
    `devices healthy for ${context.config.uncordon.holdSeconds}s: uncordoned by npu-fault`,
  );
};
