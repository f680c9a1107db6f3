import type { Principal } from '../../auth/principal.ts';
import { invalidArgument } from '../../errors.ts';
import { type BinaryIngestDeps, ingestBinary } from './binary-ingest.ts';
import { ingestTabularReadings } from './tabular-ingest.ts';
import { isTabularReadings, type TabularReadings } from './tabular-readings.ts';
import type { SensorContentInput, UploadMetadataInput, UploadResult } from './upload-types.ts';

/**
 * DataCaptureUpload: TABULAR_SENSOR → every entry is a reading; BINARY_SENSOR (or FILE) → exactly one
 * binary entry. An unspecified type is inferred from the contents. Contents already decoded into
 * tabular readings (the API layer's hot path, only for tabular or unspecified uploads) are readings.
 */
export async function ingestDataCapture(
  deps: BinaryIngestDeps,
  principal: Principal,
  metadata: UploadMetadataInput,
  contents: TabularReadings | readonly SensorContentInput[],
  options: { signal?: AbortSignal } = {},
): Promise<UploadResult> {
  if (isTabularReadings(contents)) {
    if (metadata.dataType !== 'tabular-sensor' && metadata.dataType !== 'unspecified') {
      throw new Error('tabular readings given for a binary upload');
    }
    return ingestTabularReadings(deps, principal, metadata, contents);
  }
  let dataType = metadata.dataType;
  if (dataType === 'unspecified') {
    dataType = contents.some((content) => content.data.kind === 'binary')
      ? 'binary-sensor'
      : 'tabular-sensor';
  }
  if (dataType === 'tabular-sensor') return ingestTabularReadings(deps, principal, metadata, contents);
  if (contents.length !== 1) {
    throw invalidArgument(
      'sensor_contents',
      'a binary upload must contain exactly one entry (send one request per binary capture)',
      contents.length,
    );
  }
  const [content] = contents as [SensorContentInput];
  if (content.data.kind !== 'binary') {
    throw invalidArgument('sensor_contents[0]', 'a binary upload needs binary data (got struct or no data)');
  }
  return ingestBinary(deps, principal, metadata, content, content.data.value, {
    metadataField: 'metadata',
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
