/**
 * Runs one of hack/'s fetch-or-build scripts (build-promtool.sh, knative-crds.sh): immediate
 * when their artefact is cached, a Go build or download otherwise. Resolves with the script's
 * last stdout line (the path of what it found); passes on only the script's own progress lines
 * (`[<tag>] …`; Go's download chatter would drown them); rejects with the script's one-line
 * `error:` (what to install) or its last lines.
 */
import { spawn } from 'node:child_process';
import { basename } from 'node:path';

export async function runCacheScript(
  script: string,
  tag: string,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  return await new Promise((resolvePromise, reject) => {
    const child = spawn('/bin/bash', [script], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.startsWith(`[${tag}]`)) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(out.trim().split('\n').pop() ?? '');
      else {
        const errorLine = err
          .trim()
          .split('\n')
          .filter((line) => line.startsWith('error:'))
          .pop();
        const lastLines = err.trim().split('\n').slice(-3).join(' | ');
        reject(new Error(`${basename(script)} failed (exit ${code}): ${errorLine ?? lastLines}`));
      }
    });
  });
}
