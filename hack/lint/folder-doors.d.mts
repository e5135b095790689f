import type { ESLint } from 'eslint';
/** The door a relative import of `target` from `source` must go through, or null if fine. */
export function requiredDoor(source: string, target: string, isTest: boolean): string | null;
declare const plugin: ESLint.Plugin;
export default plugin;
