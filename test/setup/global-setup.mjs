// Jest loads global setup natively, outside its TypeScript transform; tsx loads the real
// implementation (start-control-plane.ts) with the project's module resolution.
import { tsImport } from 'tsx/esm/api';

export default async function globalSetup() {
  const { default: start } = await tsImport('./start-control-plane.ts', import.meta.url);
  await start();
}
