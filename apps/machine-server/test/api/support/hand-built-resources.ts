import { MachineError } from '../../../src/errors.ts';
import type { JsonObject } from '../../../src/json.ts';
import type { Camera, CameraImages } from '../../../src/resources/apis/camera.ts';
import { cameraApi, mimePng } from '../../../src/resources/apis/camera.ts';
import { genericComponentApi } from '../../../src/resources/apis/generic.ts';
import { type Motor, motorApi } from '../../../src/resources/apis/motor.ts';
import { type Readings, type Sensor, sensorApi } from '../../../src/resources/apis/sensor.ts';
import type { Resource } from '../../../src/resources/resource.ts';
import { createResourceName } from '../../../src/resources/resource-name.ts';

/** A 1×1 PNG. */
export const tinyPng = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

const closeNothing = async () => {};

export function handBuiltSensor(name: string, readings: () => Readings): Sensor {
  return {
    name: createResourceName(sensorApi, name),
    getReadings: async () => readings(),
    doCommand: async (command) => ({ echo: command }),
    close: closeNothing,
  };
}

export function handBuiltCamera(name: string): Camera {
  const capturedAt = new Date('2026-01-02T03:04:05.000Z');
  return {
    name: createResourceName(cameraApi, name),
    getImages: async (filter): Promise<CameraImages> => ({
      images: [{ sourceName: name, mimeType: mimePng, image: tinyPng }].filter(
        (image) => filter.length === 0 || filter.includes(image.sourceName),
      ),
      capturedAt,
    }),
    getImage: async (mimeType) => {
      if (mimeType !== '' && mimeType !== mimePng) {
        throw new MachineError(
          'InvalidArgument',
          `mime_type ${JSON.stringify(mimeType)} is not supported (image/png)`,
        );
      }
      return { mimeType: mimePng, image: tinyPng };
    },
    getProperties: async () => ({ supportsPcd: false, mimeTypes: [mimePng] }),
    doCommand: async () => {
      throw new MachineError('Unimplemented', 'DoCommand is not implemented by this camera');
    },
    close: closeNothing,
  };
}

export interface HandBuiltMotor extends Motor {
  readonly state: { powerPct: number; position: number; stops: number };
}

export function handBuiltMotor(name: string): HandBuiltMotor {
  const state = { powerPct: 0, position: 0, stops: 0 };
  return {
    name: createResourceName(motorApi, name),
    state,
    setPower: async (powerPct) => {
      if (powerPct < -1 || powerPct > 1) {
        throw new MachineError('InvalidArgument', `power_pct ${powerPct} is outside [-1, 1]`);
      }
      state.powerPct = powerPct;
    },
    goFor: async (_rpm, revolutions) => {
      state.position += revolutions;
    },
    goTo: async (_rpm, position) => {
      state.position = position;
    },
    setRpm: async () => {
      state.powerPct = 1;
    },
    resetZeroPosition: async (offset) => {
      state.position = offset;
    },
    getPosition: async () => state.position,
    getProperties: async () => ({ positionReporting: true }),
    isPowered: async () => ({ isOn: state.powerPct !== 0, powerPct: state.powerPct }),
    isMoving: async () => state.powerPct !== 0,
    stop: async () => {
      state.powerPct = 0;
      state.stops += 1;
    },
    doCommand: async (command) => ({ motor: name, received: command }),
    close: closeNothing,
  };
}

export function handBuiltGeneric(name: string): Resource {
  return {
    name: createResourceName(genericComponentApi, name),
    doCommand: async (command: JsonObject, options) => {
      if (command.wait === true) {
        // Runs until the call is cancelled (client gone, deadline, CancelOperation).
        await new Promise((_resolve, reject) => {
          options.signal.addEventListener('abort', () => reject(options.signal.reason), { once: true });
        });
      }
      return { command, extra: options.extra ?? {} };
    },
    close: closeNothing,
  };
}
