// Follows this pod's node through the mounted mirror ConfigMap and drains the HTTP server
// when one of the node's accelerators fails. NODE_NAME comes from the downward API.
import { createServer } from 'node:http';
import { drainOnFailure, followStatus } from 'npu-fault/consumer';

const server = createServer((_req, res) => res.end('ok\n')).listen(8000);

// transport: 'file' reads /config/fault.json (refreshes with the kubelet's sync, about a
// minute); 'sse' follows the node agent (seconds, no RBAC); 'watch' the API (needs rbac.yaml).
const follower = followStatus({ transport: process.env.TRANSPORT ?? 'file', dir: '/config' });

follower.onChange((u) => console.log(`node ${u.node}: ${u.health} (published ${u.publishedAt})`));
follower.onDeviceFailed(({ node, device }) => console.log(`${node}/${device.id} failed: ${device.reason}`));
follower.onStale((stale) => console.log(stale ? 'status publisher is silent' : 'status publisher is back'));
follower.onError((error) => console.error(`status: ${error.message}`));

const drain = drainOnFailure(server, follower, { graceMs: 30_000 });
await drain.drained;
console.log('drained: exiting so the workload is rescheduled');
await follower.close();
process.exit(1);
