/**
 * The maintenance window (A8): before each non-initial reconfigure, read the configured sensor
 * (5 s timeout); reconfiguration is allowed iff the reading at `maintenance_allowed_key` is boolean
 * `true`. An unparsable sensor name or a missing sensor allows it (with an error logged); a read
 * error, a missing key or a non-boolean value blocks it.
 */

import type { MaintenanceConfig } from '../config/machine-config.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { ResourceLookup } from '../machine-host.ts';
import { isSensor } from '../resources/apis/sensor.ts';
import { parseResourceName } from '../resources/resource-name.ts';

export interface MaintenanceDecision {
  readonly allowed: boolean;
  readonly reason: string;
}

export async function checkMaintenanceWindow(
  maintenance: MaintenanceConfig | undefined,
  resources: ResourceLookup,
  logger: Logger,
  signal: AbortSignal,
): Promise<MaintenanceDecision> {
  if (!maintenance) return { allowed: true, reason: 'no maintenance config' };
  let name: ReturnType<typeof parseResourceName>;
  try {
    name = parseResourceName(maintenance.sensorName, 'maintenance.sensor_name');
  } catch (error) {
    logger.error('maintenance sensor name cannot be parsed; allowing reconfiguration', {
      error: errorMessage(error),
    });
    return { allowed: true, reason: 'sensor name cannot be parsed' };
  }
  const resource = resources.get(name);
  if (!resource || !isSensor(resource)) {
    logger.error('maintenance sensor not found; allowing reconfiguration', {
      sensor: maintenance.sensorName,
    });
    return { allowed: true, reason: 'sensor not found' };
  }
  try {
    const readings = await resource.getReadings({
      signal: AbortSignal.any([signal, AbortSignal.timeout(5000)]),
    });
    const value = readings[maintenance.maintenanceAllowedKey];
    if (value === true) return { allowed: true, reason: `${maintenance.maintenanceAllowedKey} is true` };
    if (value === undefined)
      return { allowed: false, reason: `reading has no key ${maintenance.maintenanceAllowedKey}` };
    if (typeof value !== 'boolean')
      return { allowed: false, reason: `${maintenance.maintenanceAllowedKey} is not a boolean` };
    return { allowed: false, reason: `${maintenance.maintenanceAllowedKey} is false` };
  } catch (error) {
    return { allowed: false, reason: `reading the maintenance sensor failed: ${errorMessage(error)}` };
  }
}
