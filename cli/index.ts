// index.ts — pd3/cli: what PD3's own command lines are built with (typed settings, flags and JSON
// config files in layers, --help, JSON-line logs, a daemon runner with metrics), exported so that a
// data system built on PD3 — the example apps among them — behaves the same way on its command line.
export { parseCommand, optionsFromObject, withoutUndefined, readConfigFile, layer } from './config.js';
export type { Command, SettingLayers, SettingTable, SettingValues, ConfigSource } from './config.js';
export { runDeployable } from './daemon.js';
export type { Deployable, Running } from './daemon.js';
export { parseEndpoint, formatEndpoint, isIPv4 } from './endpoint.js';
export type { Endpoint, EndpointRules } from './endpoint.js';
export { renderHelp } from './help.js';
export type { HelpText } from './help.js';
export { Logger, LOG_LEVELS } from './logger.js';
export type { LogLevel, LogFields } from './logger.js';
export { describeJson, integer, integerOr, size, fraction, choice, onOff, text, path, endpoint, endpointOrOff, endpointList } from './settings.js';
export type { Setting, SettingText } from './settings.js';
export { parseSize, formatSize } from './sizes.js';
export { resolveToken, TOKEN_MAX_BYTES } from './token.js';
export type { TokenSetting } from './token.js';
export { UsageError, EXIT_USAGE, EXIT_FAILURE } from './usage-error.js';
export { POOL_SETTINGS, poolOptions, tenantName } from './pool-settings.js';
export type { PoolOptions } from './pool-settings.js';
export { packageVersion } from './version.js';
