import { invalidArgument } from '../errors.ts';
import { fleetLimits } from './fleet-context.ts';

/** User metadata is a JSON object of bounded size (the limit is named in the error). */
export function validateMetadata(
  field: string,
  data: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const value = data ?? {};
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > fleetLimits.metadataMaxBytes) {
    throw invalidArgument(
      field,
      `must be at most ${fleetLimits.metadataMaxBytes} bytes of JSON`,
      `${bytes} bytes`,
    );
  }
  return value;
}
