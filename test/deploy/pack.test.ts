import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

// The install test below fetches the dependencies from the registry (20-30 s on a busy 2-core
// machine): five minutes for the file, whatever .taprc's default.
t.setTimeout(300_000)

// What a user of the package needs: the compiled library, routes and bins, the OpenAPI document,
// the licence, the console page's files and the documentation the README links to.
const SHIPPED = /^(package\.json|README\.md|LICENSE|docs\/[^/]+\.md|openapi\/[^/]+|console\/[^/]+\.(html|js|css)|dist\/(src|routes|bin)\/.+\.(js|d\.ts|js\.map))$/

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
  t.same(files.filter((f) => /^(dist\/)?(test|bench)\//.test(f)), [], 'no tests, no bench')
  // A source map ships only beside the code it maps (none of a test or a deleted module).
  t.same(files.filter((f) => f.endsWith('.js.map') && !files.includes(f.slice(0, -'.map'.length))), [], 'no map without its .js')
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
  // The licence, and every page of docs/ (the README's relative links point there).
  t.ok(files.includes('LICENSE'), 'LICENSE')
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'))
  t.ok(docs.length > 0, 'docs/ has pages')
  for (const page of docs) t.ok(files.includes(`docs/${page}`), `docs/${page}`)
})

t.test('the packed tarball installs and runs without the dev dependencies', async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), 'mcp-pure-http-pack-'))
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
  const packDir = join(scratch, 'pack')
  const app = join(scratch, 'app')
  mkdirSync(packDir)
  mkdirSync(app)
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], { cwd: root })
  const tarball = join(packDir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename)
  t.ok(existsSync(tarball), 'npm pack wrote the tarball')

  await run('npm', ['init', '-y'], { cwd: app })
  const started = Date.now()
  // The dependencies come from the registry; the package itself from the tarball.
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: app, maxBuffer: 16 << 20 })
  t.comment(`npm install of the tarball: ${((Date.now() - started) / 1000).toFixed(1)} s`)

  writeFileSync(join(app, 'probe.mjs'), `
    const lib = await import('mcp-pure-http')
    const client = await import('mcp-pure-http/client')
    // The console's files are read from the package at start: served from an installed copy too.
    const server = await lib.buildServer({ mcp: new lib.McpServer({ name: 'probe', version: '1.0.0' }), docs: true, logger: false, telemetry: false })
    const pages = []
    for (const url of ['/console', '/console/app.js', '/console/console.css']) pages.push((await server.inject({ url })).statusCode)
    await server.close()
    console.log(JSON.stringify({
      McpServer: typeof lib.McpServer,
      buildServer: typeof lib.buildServer,
      PureHttpClient: typeof client.PureHttpClient,
      pages
    }))
  `)
  const probe = await run(process.execPath, ['probe.mjs'], { cwd: app })
  t.same(JSON.parse(probe.stdout), { McpServer: 'function', buildServer: 'function', PureHttpClient: 'function', pages: [200, 200, 200] }, 'exports, and the console from the installed package')

  const bin = join(app, 'node_modules', '.bin', 'mcp-http')
  const help = await run(bin, ['--help'], { cwd: app }) // rejects on a non-zero exit
  t.match(help.stdout, /mcp-http/, 'mcp-http --help')

  // The size of a production install: the packages npm placed (its hidden lockfile lists each
  // one), and the disk they take.
  const lock = JSON.parse(readFileSync(join(app, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> }
  const count = Object.keys(lock.packages).filter((p) => p.startsWith('node_modules/')).length
  const du = await run('du', ['-sk', join(app, 'node_modules')])
  const kb = Number(du.stdout.split('\t')[0])
  t.comment(`production install: ${count} packages, ${(kb / 1024).toFixed(1)} MB on disk`)
  t.ok(count > 0, 'packages installed')
})
