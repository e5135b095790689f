// See global-setup.mjs.
import { tsImport } from 'tsx/esm/api';

export default async function globalTeardown() {
  const { default: stop } = await tsImport('./stop-control-plane.ts', import.meta.url);
  await stop();
}
