/** `record`: writes the new record alone (and removes our taint when a person uncordoned the node). */
import { nodeObject, type ActionHandler } from './context.js';
import { withoutTaint } from './taints.js';

export const record: ActionHandler<'record'> = async (action, context) => {
  const { records, signal } = context;
  const state = await records.unchanged(action.node, context.expected, signal);
  if (!state || !context.leading()) return context.count('record', 'stale');
  await records.write(
    action.node,
    state.resourceVersion,
    { ...(action.untaint ? { taints: withoutTaint(state.taints) } : {}), record: action.record },
    signal,
  );
  context.count('record', 'ok');
  context.log.info(
    { node: action.node, phase: action.record.phase, why: action.why },
    'remediation record updated',
  );
  if (action.record.phase === 'overridden')
    context.events.record(
      nodeObject(action.node),
      'Normal',
      'ManualUncordonRespected',
      'uncordoned by a person: npu-fault leaves it alone until it recovers',
    );
};
