// `npm start` and `npm run dev` without a needless build: tsc (even incremental) reads every source,
// which takes seconds; comparing modification times takes milliseconds. When a source is newer than
// the last build, `tsc --incremental` rebuilds what changed.
import { spawnSync } from 'node:child_process'
import { readdirSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'

const STAMP = 'dist/tsconfig.tsbuildinfo'
const SOURCES = ['src', 'routes', 'bin', 'scripts', 'bench', 'tsconfig.json', 'package.json']

function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (stat === undefined) return 0
  if (!stat.isDirectory()) return stat.mtimeMs
  // The directory's own time too: a file removed or renamed changes only that.
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))))
}

const built = statSync(STAMP, { throwIfNoEntry: false })?.mtimeMs ?? 0
if (SOURCES.some((s) => newest(s) > built)) {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--incremental'], { stdio: 'inherit' })
  if (tsc.status !== 0) process.exit(tsc.status ?? 1)
  // tsc leaves the stamp alone when no output changed (a file saved unchanged): touch it, or every start would rebuild.
  const now = new Date()
  utimesSync(STAMP, now, now)
}
