/** In-memory NodeClient and EventClient that record what was written, for unit tests. */
import type { EventBody, EventClient, NodeClient, NodeConditionPatch } from './clients.js';

/** Records every Node write; `fail` makes the next writes throw. */
export class FakeNodeClient implements NodeClient {
  readonly conditions = new Map<string, NodeConditionPatch>();
  readonly annotations = new Map<string, Record<string, string>>();
  readonly writes: string[] = [];
  fail: Error | undefined;

  patchCondition(node: string, condition: NodeConditionPatch): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    this.writes.push(`condition ${node} ${condition.status} ${condition.reason}`);
    // A strategic merge on `type`: fields left out keep their values.
    this.conditions.set(node, { ...this.conditions.get(node), ...condition });
    return Promise.resolve();
  }

  patchAnnotations(node: string, annotations: Record<string, string | null>): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    const current = { ...this.annotations.get(node) };
    for (const [key, value] of Object.entries(annotations)) {
      this.writes.push(`annotation ${node} ${key}=${value ?? '<removed>'}`);
      if (value === null) delete current[key];
      else current[key] = value;
    }
    this.annotations.set(node, current);
    return Promise.resolve();
  }

  removeAnnotationIf(node: string, key: string, value: string): Promise<boolean> {
    if (this.fail) return Promise.reject(this.fail);
    const current = { ...this.annotations.get(node) };
    if (current[key] !== value) return Promise.resolve(false);
    this.writes.push(`annotation ${node} ${key}=<removed>`);
    delete current[key];
    this.annotations.set(node, current);
    return Promise.resolve(true);
  }
}

/** Records Events; `bump` updates a recorded one. */
export class FakeEventClient implements EventClient {
  readonly events = new Map<string, EventBody>();
  fail: Error | undefined;

  create(event: EventBody): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    this.events.set(`${event.namespace}/${event.name}`, { ...event });
    return Promise.resolve();
  }

  bump(namespace: string, name: string, count: number, lastTimestamp: string): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    const event = this.events.get(`${namespace}/${name}`);
    if (!event) return Promise.reject(new Error(`no event ${namespace}/${name}`));
    event.count = count;
    event.lastTimestamp = lastTimestamp;
    return Promise.resolve();
  }
}
