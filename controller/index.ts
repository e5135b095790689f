/**
 * The controller (`npu-fault controller`): the one door into controller/. Its parts have
 * their own doors (leader-election, watch, publisher, observations, node-status).
 */
export { createController, type Controller, type ControllerDeps } from './app.js';
export { controllerConfigSchema, identityOf, type ControllerConfig } from './config.js';
export { EngineHost, type AcceptResult, type ObservationJournal } from './engine-host.js';
export { createFileJournal, type FileJournal } from './journal.js';
