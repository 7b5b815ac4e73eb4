// Regenerates src/events/schema/lifecycle-event-data.v1.json from the zod schema (a unit test fails while it is stale).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderLifecycleEventDataJsonSchema } from './schema.ts';

const LIFECYCLE_EVENT_DATA_SCHEMA_FILE = new URL('./schema/lifecycle-event-data.v1.json', import.meta.url);

writeFileSync(LIFECYCLE_EVENT_DATA_SCHEMA_FILE, renderLifecycleEventDataJsonSchema());
console.log(`wrote ${fileURLToPath(LIFECYCLE_EVENT_DATA_SCHEMA_FILE)}`);
