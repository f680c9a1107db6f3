/** ResourceConfig → `viam.app.v1.ComponentConfig`, as the module protocol sends configs (appendix §1.3). */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { robotPb } from '@mcloud/protocol/machine';
import type { ResourceConfig } from '../resources/resource-config.ts';
import { formatApi, formatModel } from '../resources/resource-name.ts';

export function componentConfigFromResourceConfig(
  config: ResourceConfig,
): MessageInitShape<typeof robotPb.ComponentConfigSchema> {
  return {
    name: config.name,
    // Deprecated fields older modules still read.
    namespace: config.api.namespace,
    type: config.api.subtype,
    api: formatApi(config.api),
    model: formatModel(config.model),
    attributes: config.attributes,
    dependsOn: [...config.dependsOn],
    serviceConfigs: config.serviceConfigs.map((entry) => ({
      type: entry.type,
      attributes: entry.attributes,
    })),
    ...(config.logLevel ? { logConfiguration: { level: config.logLevel } } : {}),
  };
}
