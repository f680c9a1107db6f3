/** `-dump-resources PATH`: a tab-indented JSON array of `{api, model, attribute_schema?}`, sorted by api then model. */
import { writeFile } from 'node:fs/promises';
import type { ModelRegistry } from '../resources/model-registry.ts';
import { formatApi, formatModel } from '../resources/resource-name.ts';

export function dumpResourcesJson(registry: ModelRegistry): string {
  const entries = registry.list().map((registration) => ({
    api: formatApi(registration.api),
    model: formatModel(registration.model),
    ...(registration.attributeSchema ? { attribute_schema: registration.attributeSchema } : {}),
  }));
  return `${JSON.stringify(entries, null, '\t')}\n`;
}

export async function writeDumpResources(registry: ModelRegistry, file: string): Promise<void> {
  await writeFile(file, dumpResourcesJson(registry));
}
