import { execFile } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

// What a user of the package needs: the compiled library, routes and bins, the OpenAPI document.
const SHIPPED = /^(package\.json|README\.md|openapi\/[^/]+|dist\/(src|routes|bin)\/.+\.(js|d\.ts|js\.map))$/

t.test('npm pack ships only what a user needs', async (t) => {
  // Files a build of the tests or the bench would leave in dist/: they must stay out whatever is there.
  const probes = ['dist/test/pack-probe.js', 'dist/bench/pack-probe.js', 'dist/scripts/pack-probe.js']
  for (const probe of probes) {
    mkdirSync(root + probe.slice(0, probe.lastIndexOf('/')), { recursive: true })
    writeFileSync(root + probe, '')
  }
  t.teardown(() => probes.forEach((probe) => rmSync(root + probe)))
  // --ignore-scripts: `prepare` would build again; `npm test` built already.
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root })
  const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path)
  t.same(files.filter((f) => !SHIPPED.test(f)), [], 'nothing else')
  for (const probe of probes) t.notOk(files.includes(probe), probe)
  t.notOk(files.some((f) => f.endsWith('.tsbuildinfo')))
  // Every entry point package.json names is in the package.
  for (const needed of [
    'dist/src/index.js',
    'dist/src/index.d.ts',
    'dist/src/client/index.js',
    'dist/src/client/index.d.ts',
    'dist/bin/mcp-http.js',
    'dist/bin/dev.js',
    'dist/bin/dev-server.js',
    'dist/src/main.js',
    'openapi/openapi.json'
  ]) {
    t.ok(files.includes(needed), needed)
  }
})
