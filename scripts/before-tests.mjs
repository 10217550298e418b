// tap's `before` step (.taprc), so also for a file run alone with `npx tap`: build dist/ if a source
// is newer than the last build, and install the test tools (scripts/test-tools.mjs) if they are
// missing or older than test/tools/package-lock.json.
import './build-if-stale.mjs'
import { ensureTools } from './test-tools.mjs'

process.exitCode = ensureTools()
