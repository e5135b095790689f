/** Rules-file loading (YAML or JSON text → validated Rules); the folder's only public door. */
export { RulesError, defaultRules, parseRules, reloadRules, type ReloadResult } from './load.js';
export { DEFAULT_RULES, rulesSchema, type Rules, type RulesInput } from '../../contracts/rules.js';
