import { fromJson } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { cameraPb, dataPb } from '@mcloud/protocol/machine';
import { cameraApi, isCamera, mimeJpeg, mimePng } from '../../resources/apis/camera.ts';
import { doCommandHandler, type ResourceCalls } from './resource-calls.ts';

const formatOfMime: Record<string, cameraPb.Format> = {
  [mimeJpeg]: cameraPb.Format.JPEG,
  [mimePng]: cameraPb.Format.PNG,
  'image/vnd.viam.rgba': cameraPb.Format.RAW_RGBA,
  'image/vnd.viam.dep': cameraPb.Format.RAW_DEPTH,
};

/** `viam.component.camera.v1.CameraService`: GetImages, GetImage, GetProperties, DoCommand. */
export function cameraHandlers(calls: ResourceCalls): Partial<ServiceImpl<typeof cameraPb.CameraService>> {
  return {
    async getImages(request, context) {
      const { images, capturedAt } = await calls.call(
        cameraApi,
        isCamera,
        request.name,
        request.extra,
        context,
        (camera, options) => camera.getImages(request.filterSourceNames, options),
      );
      return {
        images: images.map((image) => ({
          sourceName: image.sourceName,
          mimeType: image.mimeType,
          format: formatOfMime[image.mimeType] ?? cameraPb.Format.UNSPECIFIED,
          image: image.image,
          ...(image.annotations
            ? { annotations: fromJson(dataPb.AnnotationsSchema, image.annotations) }
            : {}),
        })),
        responseMetadata: { capturedAt: timestampFromDate(capturedAt) },
      };
    },
    async getImage(request, context) {
      const frame = await calls.call(
        cameraApi,
        isCamera,
        request.name,
        request.extra,
        context,
        (camera, options) => camera.getImage(request.mimeType, options),
      );
      return { mimeType: frame.mimeType, image: frame.image };
    },
    async getProperties(request, context) {
      const properties = await calls.call(
        cameraApi,
        isCamera,
        request.name,
        undefined,
        context,
        (camera, options) => camera.getProperties(options),
      );
      return {
        supportsPcd: properties.supportsPcd,
        mimeTypes: properties.mimeTypes,
        ...(properties.intrinsicParameters ? { intrinsicParameters: properties.intrinsicParameters } : {}),
        ...(properties.frameRate === undefined ? {} : { frameRate: properties.frameRate }),
      };
    },
    doCommand: doCommandHandler(calls, cameraApi, isCamera),
  };
}
