/**
 * `rdk:component:camera` model `fake`: generated frames (a moving colour gradient with a frame
 * counter bar) encoded as JPEG (jpeg-js) or PNG. Attributes: `width` (default 320), `height` (240),
 * `mime_type` (`image/jpeg` default, or `image/png`).
 */
import jpeg from 'jpeg-js';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { MachineError } from '../errors.ts';
import type { JsonObject } from '../json.ts';
import { type Camera, cameraApi, mimeJpeg, mimePng } from '../resources/apis/camera.ts';
import type { ModelRegistration } from '../resources/model-registry.ts';
import { builtinModel, shortName } from '../resources/resource-name.ts';
import { numberAttribute, rejectUnknownAttributes, stringAttribute } from './attributes.ts';
import { fakeBehaviour, fakeBehaviourKeys, fakeBehaviourSchema } from './fake-behaviour.ts';
import { encodePng } from './png-encode.ts';

const keys = ['width', 'height', 'mime_type', ...fakeBehaviourKeys];
const mimeTypes = [mimeJpeg, mimePng];

export function createFakeCameraRegistration(clock: Clock = systemClock): ModelRegistration {
  const dimensions = (config: Parameters<NonNullable<ModelRegistration['validate']>>[0]) => ({
    width: numberAttribute(config, 'width', { min: 8, max: 4096, fallback: 320, integer: true }),
    height: numberAttribute(config, 'height', { min: 8, max: 4096, fallback: 240, integer: true }),
    mimeType: stringAttribute(config, 'mime_type', mimeTypes) ?? mimeJpeg,
  });
  return {
    api: cameraApi,
    model: builtinModel('fake'),
    source: 'builtin',
    attributeSchema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        width: { type: 'integer', minimum: 8, maximum: 4096, default: 320 },
        height: { type: 'integer', minimum: 8, maximum: 4096, default: 240 },
        mime_type: { enum: mimeTypes, default: mimeJpeg },
        ...fakeBehaviourSchema,
      },
    },
    validate(config) {
      rejectUnknownAttributes(config, keys);
      dimensions(config);
      fakeBehaviour(config);
      return { requiredDeps: [], optionalDeps: [] };
    },
    async build({ config, signal }) {
      const behaviour = fakeBehaviour(config);
      await behaviour.beforeBuild(signal);
      const { width, height, mimeType } = dimensions(config);
      let frame = 0;
      const encode = (mime: string) => {
        const rgba = renderFrame(width, height, frame++);
        if (mime === mimePng) return encodePng(width, height, rgba);
        return new Uint8Array(jpeg.encode({ data: rgba, width, height }, 75).data);
      };
      const pick = (requested: string) => {
        const mime = requested === '' ? mimeType : requested.replace(/\+lazy$/, '');
        if (!mimeTypes.includes(mime)) {
          throw new MachineError(
            'InvalidArgument',
            `mime_type: fake camera serves ${mimeTypes.join(', ')} (got ${JSON.stringify(requested)})`,
          );
        }
        return mime;
      };
      const camera: Camera = {
        name: config.resourceName,
        async getImages(filter) {
          const source = shortName(config.resourceName);
          if (filter.length > 0 && !filter.includes(source)) return { images: [], capturedAt: clock.now() };
          return {
            images: [{ sourceName: source, mimeType, image: encode(mimeType) }],
            capturedAt: clock.now(),
          };
        },
        async getImage(requested) {
          const mime = pick(requested);
          return { mimeType: mime, image: encode(mime) };
        },
        async getProperties() {
          return {
            supportsPcd: false,
            mimeTypes: [...mimeTypes],
            intrinsicParameters: {
              widthPx: width,
              heightPx: height,
              focalXPx: width,
              focalYPx: width,
              centerXPx: width / 2,
              centerYPx: height / 2,
            },
          };
        },
        async doCommand(command: JsonObject) {
          throw new MachineError(
            'Unimplemented',
            `fake camera has no commands (got ${Object.keys(command).join(', ') || 'none'})`,
          );
        },
        close: () => behaviour.onClose(),
      };
      return camera;
    },
  };
}

/** A diagonal gradient shifted by the frame number, with a white bar whose length counts frames. */
function renderFrame(width: number, height: number, frame: number): Uint8Array {
  const rgba = new Uint8Array(width * height * 4);
  const bar = frame % width;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      const onBar = y < 6 && x <= bar;
      rgba[i] = onBar ? 255 : (x + frame * 4) & 0xff;
      rgba[i + 1] = onBar ? 255 : (y * 2) & 0xff;
      rgba[i + 2] = onBar ? 255 : (x + y + frame) & 0xff;
      rgba[i + 3] = 255;
    }
  }
  return rgba;
}
