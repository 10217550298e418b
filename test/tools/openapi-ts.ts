// @hey-api/openapi-ts from the test tools (test/tools/package.json, installed by scripts/test-tools.mjs).
export { createClient } from '@hey-api/openapi-ts'
