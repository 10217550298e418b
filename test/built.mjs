// Test files are TypeScript, loaded by tsx; what they import from the library (src/, routes/, bin/,
// bench/) is loaded from dist/, where `npm run build` (tap's `before` step) compiled it with tsc. Two
// reasons: each test process skips transpiling ~150 library files (the suite's largest fixed cost),
// and coverage is measured on the same compiled code, with tsc's source maps, as in the servers and
// CLIs the tests start from dist/ (tsx's own output is whitespace-minified, which line coverage
// cannot map back). Registered after tsx, this hook runs first and sees tsx's resolution.
import { register } from 'node:module'

register('./built-hooks.mjs', import.meta.url)
