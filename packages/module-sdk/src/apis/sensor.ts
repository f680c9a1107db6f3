/** `rdk:component:sensor` — viam.component.sensor.v1.SensorService. */
import { createClient } from '@connectrpc/connect';
import { sensorPb } from '@mcloud/protocol/machine';
import { type ApiDefinition, callOptions } from '../api-definition.ts';
import { type JsonValue, jsonToValueMap, valueMapToJson } from '../json.ts';
import type { CallOptions, Resource } from '../resource.ts';
import type { Api } from '../resource-name.ts';
import { doCommandHandler, remoteResource } from './common.ts';

export const sensorApi: Api = { namespace: 'rdk', type: 'component', subtype: 'sensor' };

export type Readings = Record<string, JsonValue>;

export interface Sensor extends Resource {
  getReadings(options: CallOptions): Promise<Readings>;
}

export const sensorDefinition: ApiDefinition<Sensor> = {
  api: sensorApi,
  service: sensorPb.SensorService,
  serve(router, lookup) {
    router.service(sensorPb.SensorService, {
      async getReadings(request, context) {
        const readings = await lookup(request.name).getReadings(callOptions(request.extra, context.signal));
        return { readings: jsonToValueMap(readings) };
      },
      doCommand: doCommandHandler(lookup),
    });
  },
  client(name, transport) {
    const client = createClient(sensorPb.SensorService, transport);
    return {
      ...remoteResource(name, client.doCommand),
      async getReadings(options) {
        const response = await client.getReadings(
          { name: name.name, ...(options.extra ? { extra: options.extra } : {}) },
          { signal: options.signal },
        );
        return valueMapToJson(response.readings);
      },
    };
  },
};
