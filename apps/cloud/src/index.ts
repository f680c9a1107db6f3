/** Public surface of the cloud for other workspaces (machine-server end-to-end tests, benchmarks). */
export type { BootstrapFile } from './bootstrap.ts';
export { type CloudLogger, type RunningCloud, silentLogger, startCloud } from './cloud-app.ts';
export { type CloudConfig, ConfigError, loadCloudConfig } from './config/cloud-config.ts';
export type { Clock } from './domain/shared/clock.ts';
