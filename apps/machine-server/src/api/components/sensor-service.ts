import { fromJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { sensorPb } from '@mcloud/protocol/machine';
import { isSensor, sensorApi } from '../../resources/apis/sensor.ts';
import { doCommandHandler, type ResourceCalls } from './resource-calls.ts';

/** `viam.component.sensor.v1.SensorService`: GetReadings, DoCommand. */
export function sensorHandlers(calls: ResourceCalls): Partial<ServiceImpl<typeof sensorPb.SensorService>> {
  return {
    async getReadings(request, context) {
      const readings = await calls.call(
        sensorApi,
        isSensor,
        request.name,
        request.extra,
        context,
        (sensor, options) => sensor.getReadings(options),
      );
      return {
        readings: Object.fromEntries(
          Object.entries(readings).map(([key, value]) => [key, fromJson(ValueSchema, value)]),
        ),
      };
    },
    doCommand: doCommandHandler(calls, sensorApi, isSensor),
  };
}
