/** `rdk:component:camera` — viam.component.camera.v1.CameraService. */
import type { JsonObject } from '../../json.ts';
import type { CallOptions, Resource } from '../resource.ts';
import { apiEquals, componentApi } from '../resource-name.ts';

export const cameraApi = componentApi('camera');

export const mimeJpeg = 'image/jpeg';
export const mimePng = 'image/png';

export interface CameraImage {
  /** Source (sensor) name; fake cameras use their resource name. */
  sourceName: string;
  /** e.g. `image/jpeg`, `image/png` (the wire Format enum is derived from it by ms-api). */
  mimeType: string;
  image: Uint8Array;
  /** Optional per-image annotations (Image.annotations on the wire); none for built-ins. */
  annotations?: JsonObject;
}

export interface CameraImages {
  images: CameraImage[];
  /** Capture time (ResponseMetadata.captured_at). */
  capturedAt: Date;
}

export interface CameraProperties {
  supportsPcd: boolean;
  intrinsicParameters?: {
    widthPx: number;
    heightPx: number;
    focalXPx: number;
    focalYPx: number;
    centerXPx: number;
    centerYPx: number;
  };
  mimeTypes: string[];
  frameRate?: number;
}

export interface Camera extends Resource {
  /** `GetImages`: every source, or only `filterSourceNames` when non-empty. */
  getImages(filterSourceNames: readonly string[], options: CallOptions): Promise<CameraImages>;
  /** `GetImage`: one frame in `mimeType` (empty → the camera's default). */
  getImage(mimeType: string, options: CallOptions): Promise<{ mimeType: string; image: Uint8Array }>;
  /** `GetProperties`. */
  getProperties(options: CallOptions): Promise<CameraProperties>;
}

export function isCamera(resource: Resource): resource is Camera {
  return apiEquals(resource.name.api, cameraApi);
}
