/** Rules-file loading (YAML or JSON text → validated Rules); the folder's only public door. */
export { defaultRules, parseRules, reloadRules, type ReloadResult } from './load.js';
export { MAX_NESTING, MAX_RULES_CHARS, MAX_VALUES } from './read-document.js';
export { RulesError, fieldPath } from './rules-error.js';
export { DEFAULT_RULES, rulesSchema, type Rules, type RulesInput } from '../../contracts/index.js';
