/** `rdk:component:sensor` model `fake`: fixed `readings` if configured, else `{a: 1, b: 2, c: 3}`, plus a call counter. */
import { isJsonObject, type JsonObject } from '../json.ts';
import type { Sensor } from '../resources/apis/sensor.ts';
import { sensorApi } from '../resources/apis/sensor.ts';
import type { ModelRegistration } from '../resources/model-registry.ts';
import { builtinModel } from '../resources/resource-name.ts';
import { objectAttribute, rejectUnknownAttributes } from './attributes.ts';
import { fakeBehaviour, fakeBehaviourKeys, fakeBehaviourSchema } from './fake-behaviour.ts';

const keys = ['readings', ...fakeBehaviourKeys];

export const fakeSensorRegistration: ModelRegistration = {
  api: sensorApi,
  model: builtinModel('fake'),
  source: 'builtin',
  attributeSchema: {
    type: 'object',
    additionalProperties: false,
    properties: { readings: { type: 'object', description: 'readings to return' }, ...fakeBehaviourSchema },
  },
  validate(config) {
    rejectUnknownAttributes(config, keys);
    objectAttribute(config, 'readings');
    fakeBehaviour(config);
    return { requiredDeps: [], optionalDeps: [] };
  },
  async build({ config, signal }) {
    const behaviour = fakeBehaviour(config);
    await behaviour.beforeBuild(signal);
    const fixed = objectAttribute(config, 'readings') ?? { a: 1, b: 2, c: 3 };
    let calls = 0;
    const sensor: Sensor = {
      name: config.resourceName,
      async getReadings() {
        calls++;
        return { ...fixed };
      },
      async doCommand(command: JsonObject): Promise<JsonObject> {
        if (isJsonObject(command) && command.calls !== undefined) return { calls };
        return { echo: command };
      },
      close: () => behaviour.onClose(),
    };
    return sensor;
  },
};
