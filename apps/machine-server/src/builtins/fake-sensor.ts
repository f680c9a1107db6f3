/**
 * `rdk:component:sensor` model `fake`: fixed `readings` if configured, else `{a: 1, b: 2, c: 3}`; with
 * `readings_file` the readings are the JSON object in that file, read on every call (a sensor whose
 * value tests and demos can change, e.g. a maintenance-window switch).
 */
import { readFile } from 'node:fs/promises';
import { MachineError } from '../errors.ts';
import { isJsonObject, type JsonObject } from '../json.ts';
import type { Sensor } from '../resources/apis/sensor.ts';
import { sensorApi } from '../resources/apis/sensor.ts';
import type { ModelRegistration } from '../resources/model-registry.ts';
import { builtinModel } from '../resources/resource-name.ts';
import { objectAttribute, rejectUnknownAttributes, stringAttribute } from './attributes.ts';
import { fakeBehaviour, fakeBehaviourKeys, fakeBehaviourSchema } from './fake-behaviour.ts';

const keys = ['readings', 'readings_file', ...fakeBehaviourKeys];

export const fakeSensorRegistration: ModelRegistration = {
  api: sensorApi,
  model: builtinModel('fake'),
  source: 'builtin',
  attributeSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      readings: { type: 'object', description: 'readings to return' },
      readings_file: { type: 'string', description: 'JSON object file read on every GetReadings' },
      ...fakeBehaviourSchema,
    },
  },
  validate(config) {
    rejectUnknownAttributes(config, keys);
    objectAttribute(config, 'readings');
    stringAttribute(config, 'readings_file');
    fakeBehaviour(config);
    return { requiredDeps: [], optionalDeps: [] };
  },
  async build({ config, signal }) {
    const behaviour = fakeBehaviour(config);
    await behaviour.beforeBuild(signal);
    const fixed = objectAttribute(config, 'readings') ?? { a: 1, b: 2, c: 3 };
    const readingsFile = stringAttribute(config, 'readings_file');
    let calls = 0;
    const sensor: Sensor = {
      name: config.resourceName,
      async getReadings() {
        calls++;
        if (!readingsFile) return { ...fixed };
        const value: unknown = JSON.parse(await readFile(readingsFile, 'utf8'));
        if (!isJsonObject(value))
          throw new MachineError('FailedPrecondition', `${readingsFile} does not hold a JSON object`);
        return value;
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
