/** `rdk:component:sensor` — viam.component.sensor.v1.SensorService. */
import type { JsonValue } from '../../json.ts';
import type { CallOptions, Resource } from '../resource.ts';
import { apiEquals, componentApi } from '../resource-name.ts';

export const sensorApi = componentApi('sensor');

/** Readings: map<string, google.protobuf.Value> on the wire. */
export type Readings = Record<string, JsonValue>;

export interface Sensor extends Resource {
  /** `GetReadings`. */
  getReadings(options: CallOptions): Promise<Readings>;
}

export function isSensor(resource: Resource): resource is Sensor {
  return apiEquals(resource.name.api, sensorApi);
}
