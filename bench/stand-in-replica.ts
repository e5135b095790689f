/**
 * `node --import tsx bench/stand-in-replica.ts <identity> leader|follower`: a stand-in
 * controller replica for bench/function.ts, in a process of its own so that neither the
 * benchmark's own work nor its garbage collections hold up an answer (they did: a pause of
 * the benchmark process showed as 30–110 ms of the function's latency). Answers every
 * `POST /v1/observations` at once, accepting every observation, as the leader or a follower
 * naming `leader`. Prints `{"url":…}` once listening; exits when its stdin closes (the
 * benchmark ended, however it ended).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const [identity, role] = process.argv.slice(2);
if (!identity || (role !== 'leader' && role !== 'follower')) {
  process.stderr.write('usage: stand-in-replica.ts <identity> leader|follower\n');
  process.exit(2);
}
const leader = role === 'leader';

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    // The nodes, in order, by a scan rather than a parse: what is measured is the function,
    // and the stand-ins share a core with the load generator (a snapshot's only "node" key
    // is its own: 910B payloads have none).
    const nodes = [
      ...Buffer.concat(chunks)
        .toString('utf8')
        .matchAll(/"node":"([^"]*)"/g),
    ].map((m) => m[1]);
    const results = nodes.map((node) =>
      leader ? { node, accepted: true, entry: null } : { node, accepted: true },
    );
    const answer = leader
      ? { leader: true, identity, term: 1, results }
      : { leader: false, identity, leader_identity: 'leader', results };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${address.port}` })}\n`);
});
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
