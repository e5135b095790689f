/**
 * `npu-fault status`: the command line settled, the operator's kubeconfig loaded, then
 * runStatus on the real API, clock and terminal. Ctrl-C ends a watch with exit 0 rather than
 * killing the process mid-write.
 */
import { isExit, settleCommandLine } from '../args.js';
import type { CliIO, Subcommand } from '../io.js';
import { loadOperatorKubeConfig } from '../kube.js';
import { STATUS, statusOptionsOf } from './args.js';
import { kubeStatusApi } from './read.js';
import { runStatus } from './run.js';

/** `npu-fault status`: see cli/status/index.ts. */
export const status: Subcommand = async (args: string[], io: CliIO): Promise<number> => {
  const options = settleCommandLine(STATUS, args, io, statusOptionsOf);
  if (isExit(options)) return options.exit;
  const kubeConfig = loadOperatorKubeConfig('status', options.kube, io);
  if (isExit(kubeConfig)) return kubeConfig.exit;
  const interrupt = new AbortController();
  const onSignal = (): void => interrupt.abort();
  if (options.watch) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  try {
    return await runStatus(options, {
      api: kubeStatusApi(kubeConfig, options.namespace),
      io,
      now: () => Date.now(),
      color: io.isTTY && !process.env.NO_COLOR,
      signal: interrupt.signal,
      every: (ms, fn) => {
        const timer = setInterval(fn, ms);
        return () => clearInterval(timer);
      },
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
};
