/**
 * What each capture method calls on a resource and how its result is stored (machine-runtime.md A5.2):
 * tabular results become one Struct reading, binary results (images) one file each.
 */

import type { JsonObject, JsonValue } from '../json.ts';
import { isJsonObject } from '../json.ts';
import { isCamera } from '../resources/apis/camera.ts';
import { isMotor } from '../resources/apis/motor.ts';
import { isSensor, type Sensor } from '../resources/apis/sensor.ts';
import type { CallOptions, Resource } from '../resources/resource.ts';
import type { CaptureDataType } from './capture-file-format.ts';

export interface BinaryCapture {
  readonly mimeType: string;
  readonly bytes: Uint8Array;
}

export type CaptureResult =
  | { readonly kind: 'tabular'; readonly value: JsonObject }
  | { readonly kind: 'binary'; readonly items: readonly BinaryCapture[] };

export interface CaptureMethod {
  readonly dataType: CaptureDataType;
  /** `params` = the method's `additional_params`; `options.extra` already carries them plus `fromDataManagement`. */
  capture(resource: Resource, params: JsonObject, options: CallOptions): Promise<CaptureResult>;
}

const doCommandMethod: CaptureMethod = {
  dataType: 'tabular',
  async capture(resource, params, options) {
    const input = params.docommand_input;
    const command = isJsonObject(input) ? input : {};
    return { kind: 'tabular', value: await resource.doCommand(command, options) };
  },
};

const readingsMethod: CaptureMethod = {
  dataType: 'tabular',
  async capture(resource, _params, options) {
    const readings = await (resource as Sensor).getReadings(options);
    return { kind: 'tabular', value: { readings: readings as { [key: string]: JsonValue } } };
  },
};

const cameraMethods: Record<string, CaptureMethod> = {
  ReadImage: {
    dataType: 'binary',
    async capture(resource, params, options) {
      if (!isCamera(resource)) throw new TypeError('not a camera');
      const mimeType = typeof params.mime_type === 'string' ? params.mime_type : '';
      const image = await resource.getImage(mimeType, options);
      return { kind: 'binary', items: [{ mimeType: image.mimeType, bytes: image.image }] };
    },
  },
  GetImages: {
    dataType: 'binary',
    async capture(resource, params, options) {
      if (!isCamera(resource)) throw new TypeError('not a camera');
      const filter = Array.isArray(params.filter_source_names)
        ? params.filter_source_names.filter((name): name is string => typeof name === 'string')
        : [];
      const result = await resource.getImages(filter, options);
      return {
        kind: 'binary',
        items: result.images.map((image) => ({ mimeType: image.mimeType, bytes: image.image })),
      };
    },
  },
};

const motorMethods: Record<string, CaptureMethod> = {
  Position: {
    dataType: 'tabular',
    async capture(resource, _params, options) {
      if (!isMotor(resource)) throw new TypeError('not a motor');
      return { kind: 'tabular', value: { position: await resource.getPosition(options) } };
    },
  },
  IsPowered: {
    dataType: 'tabular',
    async capture(resource, _params, options) {
      if (!isMotor(resource)) throw new TypeError('not a motor');
      const powered = await resource.isPowered(options);
      return { kind: 'tabular', value: { is_on: powered.isOn, power_pct: powered.powerPct } };
    },
  },
};

/** The method of `resource` named `method`, or undefined when its API has no such capture method. */
export function findCaptureMethod(resource: Resource, method: string): CaptureMethod | undefined {
  if (method === 'DoCommand') return doCommandMethod;
  if (isCamera(resource)) return cameraMethods[method];
  if (isMotor(resource)) return motorMethods[method];
  // Sensors and every other API that answers GetReadings (movement and power sensors) capture Readings.
  if (
    method === 'Readings' &&
    (isSensor(resource) || typeof (resource as Partial<Sensor>).getReadings === 'function')
  ) {
    return readingsMethod;
  }
  return undefined;
}

/** The capture methods a resource offers, for error messages. */
export function captureMethodNames(resource: Resource): string[] {
  if (isCamera(resource)) return [...Object.keys(cameraMethods), 'DoCommand'];
  if (isMotor(resource)) return [...Object.keys(motorMethods), 'DoCommand'];
  if (isSensor(resource) || typeof (resource as Partial<Sensor>).getReadings === 'function') {
    return ['Readings', 'DoCommand'];
  }
  return ['DoCommand'];
}

const extensionsByMime: Record<string, string> = {
  'image/jpeg': '.jpeg',
  'image/png': '.png',
  'pointcloud/pcd': '.pcd',
  'video/mp4': '.mp4',
  'audio/wav': '.wav',
  'audio/mpeg': '.mp3',
  'image/vnd.viam.dep': '.dep',
  'image/vnd.viam.rgba': '.rgba',
};

/** File extension hint for a binary capture (`.jpeg`, `.png`, ...); `''` when unknown. */
export function fileExtensionForMime(mimeType: string): string {
  return extensionsByMime[mimeType.split(';')[0]?.trim().toLowerCase() ?? ''] ?? '';
}

/** MIME type for an uploaded binary from its extension (the reverse of fileExtensionForMime). */
export function mimeForFileExtension(extension: string): string {
  const lower = extension.toLowerCase();
  for (const [mime, ext] of Object.entries(extensionsByMime)) if (ext === lower) return mime;
  if (lower === '.jpg') return 'image/jpeg';
  return '';
}

/** Tabular capture files use `.dat`. */
export const tabularFileExtension = '.dat';
