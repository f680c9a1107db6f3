/** `viam.app.v1.ComponentConfig` → ResourceConfig (appendix §1.3, §2.5). */
import type { robotPb } from '@mcloud/protocol/machine';
import { ModuleError } from './errors.ts';
import type { ResourceConfig } from './resource.ts';
import { checkModel, parseApi } from './resource-name.ts';

export function resourceConfigFromProto(config: robotPb.ComponentConfig | undefined): ResourceConfig {
  if (!config) throw new ModuleError('InvalidArgument', 'config: is required');
  if (!config.name) throw new ModuleError('InvalidArgument', 'config.name: is required');
  // Parents fill `api`; older ones only the deprecated namespace + type (the subtype).
  const apiText = config.api || (config.type ? `${config.namespace || 'rdk'}:component:${config.type}` : '');
  const level = config.logConfiguration?.level;
  return {
    name: config.name,
    api: parseApi(apiText, 'config.api'),
    model: checkModel(config.model, 'config.model'),
    attributes: config.attributes ?? {},
    dependsOn: [...config.dependsOn],
    ...(level ? { logLevel: level.toLowerCase() } : {}),
  };
}
