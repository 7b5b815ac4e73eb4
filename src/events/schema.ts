// The JSON Schema of lifecycle event data, generated from the zod schema and shipped in the package
// (src/events/schema/*.json, exported as `okt/schema/*.json`). `dataschema` on every event names it.
import { z } from 'zod';
import { lifecycleEventDataSchema } from './types.ts';

/** The `dataschema` of every lifecycle event and the `$id` of the shipped file: an identifier, resolved from the package. */
export const LIFECYCLE_EVENT_DATA_SCHEMA_URI = 'https://okt.dev/schemas/lifecycle-event-data.v1.json';

/** The JSON Schema text as committed: regenerate with `node src/events/write-schema.ts`. */
export function renderLifecycleEventDataJsonSchema(): string {
  const { $schema, ...rest } = z.toJSONSchema(lifecycleEventDataSchema);
  return `${JSON.stringify({ $schema, $id: LIFECYCLE_EVENT_DATA_SCHEMA_URI, title: 'okt lifecycle event data v1', ...rest }, null, 2)}\n`;
}
