// `npm run dev` in this repository: tsc --watch (incremental) rebuilds dist/ on every change of the
// sources, and bin/dev.js serves the demo (or the file given) under node --watch, which restarts on
// the rebuilt modules. Ctrl-C stops both.
import { spawn } from 'node:child_process'
import { once } from 'node:events'

const tsc = spawn(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--incremental', '--watch', '--preserveWatchOutput'], { stdio: 'inherit' })
const server = spawn(process.execPath, ['dist/bin/dev.js', ...process.argv.slice(2)], { stdio: 'inherit' })
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    for (const child of [tsc, server]) if (child.exitCode === null) child.kill('SIGTERM')
    await Promise.all([once(tsc, 'exit'), once(server, 'exit')])
  })
}
