// Every `@example` in the JSDoc of src/, routes/ and bin/ is type-checked against the package's real
// types, so an example cannot go on showing an API after it was renamed or changed (issue #38). The
// official SDK keeps its examples in compiled `*.examples.ts` files; ours stay where a reader of the
// code sees them, and this file compiles them: one TypeScript program, each example its own module,
// importing the built declarations in dist/ (what a user of the package compiles against; the build
// runs before the tests). Examples are not run: most need a server, a client or a store around them,
// and what they show is how the API is called, which the compiler checks.
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const root = fileURLToPath(new URL('../..', import.meta.url))
// Where the examples' modules live, in memory only: inside the package, so that `mcp-pure-http/client`,
// `fastify` and `zod` resolve as they would for the package's own code, and `type: module` applies.
const virtual = join(root, 'test', 'docs', 'jsdoc-examples')

interface Example {
  /** The source file, relative to the root, with `/`. */
  file: string
  /** The line (1-based) of its `@example` tag. */
  tag: number
  /** Its place among the examples of its file (1-based). */
  nth: number
  /** The line (1-based) of each of the example's lines in `file`. */
  lines: number[]
  code: string[]
}

/**
 * The `@example` blocks of one file's doc comments: from the tag (the rest of its line, for a
 * one-liner) to the next tag or the end of the comment, each line without its leading ` * `, fences
 * (```ts) left out.
 */
function examplesOf(file: string, text: string): Example[] {
  const found: Example[] = []
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const first = text.slice(0, comment.index).split('\n').length
    let current: Example | undefined
    comment[0].split('\n').forEach((raw, i) => {
      const line = raw.replace(/^\s*\/\*\*\s?/, '').replace(/\s*\*\/$/, '').replace(/^\s*\*(?: |$)/, '')
      const tag = /^\s*@(\w+)\s?(.*)$/.exec(line)
      if (tag !== null) {
        current = undefined
        if (tag[1] !== 'example') return
        current = { file, tag: first + i, nth: found.length + 1, lines: [], code: [] }
        found.push(current)
        if (tag[2]!.trim() === '') return
      }
      if (current === undefined || /^\s*```/.test(line)) return
      current.lines.push(first + i)
      current.code.push(tag === null ? line : tag[2]!)
    })
  }
  for (const e of found) {
    while (e.code.length > 0 && e.code.at(-1)!.trim() === '') {
      e.code.pop()
      e.lines.pop()
    }
  }
  return found
}

/** The names a module exports (following `export * from` into relative modules). */
function exportsOf(file: string): Set<string> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
  const names = new Set<string>()
  const exported = (s: ts.Statement) => ts.canHaveModifiers(s) && (ts.getModifiers(s) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
  for (const s of source.statements) {
    if (ts.isExportDeclaration(s)) {
      if (s.exportClause !== undefined && ts.isNamedExports(s.exportClause)) for (const e of s.exportClause.elements) names.add(e.name.text)
      else if (s.exportClause === undefined && ts.isStringLiteral(s.moduleSpecifier!) && s.moduleSpecifier.text.startsWith('.')) {
        for (const n of exportsOf(join(dirname(file), s.moduleSpecifier.text.replace(/\.js$/, '.ts')))) names.add(n)
      }
    } else if (exported(s)) {
      if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name)) names.add(d.name.text)
      if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s) || ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s) || ts.isEnumDeclaration(s)) && s.name !== undefined) names.add(s.name.text)
    }
  }
  return names
}

// What every example may use without saying where it comes from: the package's public API (all that
// src/index.ts exports), the exports of the file the example is in, and these.
const PRELUDE = [
  "import type { FastifyInstance, FastifyRequest } from 'fastify'",
  "import { Type } from '@sinclair/typebox'",
  "import { z } from 'zod'",
  'declare const mcp: McpServer',
  'declare const app: FastifyInstance',
  'declare const fastify: FastifyInstance',
  'declare const store: Store',
  'declare const client: PureHttpClient',
  'declare const ctx: RetryableContext',
  'declare const principal: Principal',
  'declare const owner: string',
  'declare const id: string',
  'declare const taskId: string',
  'declare const password: string',
  'declare const html: string',
  'declare const log: Logger',
  'declare const handler: () => string'
]

// An example that needs more than the prelude, by file and its place among the file's examples
// (`#1` the first: lines move, the order rarely does): lines of its own before it (`prelude`; a name it declares replaces the shared one), or the code it is a
// fragment of (`before` and `after` it).
const DIST = '../../../dist/src'
const SPECIAL: Record<string, { prelude?: string[]; before?: string; after?: string }> = {
  'src/app.ts#1': { before: "const options: Pick<McpPluginOptions, 'oauth'> =" },
  'src/core/cancellations.ts#1': {
    prelude: ['declare const cancellations: Cancellations', `import type { CallContext } from '${DIST}/core/call-context.js'`, 'declare const ctx: CallContext']
  },
  'src/core/definitions.ts#1': { before: "mcp.prompt({ name: 'greeting',", after: "}, ({ name }) => 'Say hello to ' + name)" },
  'src/core/definitions.ts#2': { before: "mcp.prompt({ name: 'greeting',", after: "}, ({ name }) => 'Say hello to ' + name)" },
  'src/core/registry.ts#1': { prelude: ['declare const old: { remove(): void }[]', 'declare const tools: { name: string }[]'] },
  'src/core/results.ts#1': { prelude: ['declare const out: Record<string, unknown>'] },
  'src/mrtr/resume.ts#1': { prelude: ['declare const PAGE: number', 'declare const total: number', "declare function page(from: number): { content: { type: 'text', text: string }[] }"] },
  'src/mrtr/rounds.ts#1': { prelude: ['const City = Type.Object({ city: Type.String() })'] },
  'src/plugins/cors.ts#1': {
    prelude: [`import mcpCors from '${DIST}/plugins/cors.js'`, `import { hostOriginPolicy } from '${DIST}/auth/origin.js'`, 'declare const options: HostOriginOptions']
  },
  'src/store/compose.ts#1': { prelude: ["declare const pushNotification: Mailbox['pushNotification']"] },
  'src/store/memory.ts#1': { prelude: [`import type { TaskRecord } from '${DIST}/store/records.js'`, 'declare const task: TaskRecord'] },
  'src/store/types.ts#1': { prelude: ['declare const digest: string', 'declare const result: unknown'] },
  'src/webhooks/redis.ts#1': { prelude: ['declare const store: RedisStore'] },
  'src/webhooks/sign.ts#1': { prelude: ["import type { IncomingMessage } from 'node:http'", 'declare const req: IncomingMessage', 'declare const rawBody: string'] },
  'src/webhooks/types.ts#1': { prelude: ['declare const store: WebhookStore', 'declare function send(delivery: ClaimedDelivery): Promise<boolean>'] }
}

/** The names a line of code declares or imports. */
const namesIn = (line: string) => [
  ...[...line.matchAll(/\b(?:const|let|function|class|type|interface)\s+(\w+)/g)].map((m) => m[1]!),
  ...(/import\s+(?:type\s+)?(\w+)?[\s,]*(?:\{([^}]*)\})?\s+from/.exec(line) ?? []).slice(1).flatMap((group) =>
    (group ?? '').split(',').map((n) => n.trim().replace(/^type\s+/, '').split(/\s+as\s+/).at(-1)!).filter((n) => n !== ''))
]

/** An example as its own module: imports, preludes, then its code in an async function (`await`, `return`). */
function moduleOf(e: Example, publicApi: Set<string>): { text: string, origin: (number | undefined)[] } {
  const special = SPECIAL[`${e.file}#${e.nth}`] ?? {}
  const lines: string[] = []
  const origin: (number | undefined)[] = []
  const add = (line: string, from?: number) => {
    lines.push(line)
    origin.push(from)
  }
  // The example's own imports go first; names it imports or declares are not imported again.
  const own = e.code.flatMap((c, i) => (/^\s*import\s/.test(c) ? [i] : []))
  const replaced = new Set((special.prelude ?? []).flatMap(namesIn))
  const prelude = [...PRELUDE.filter((l) => !namesIn(l).some((n) => replaced.has(n))), ...(special.prelude ?? [])]
  const taken = new Set([...own.map((i) => e.code[i]!), ...prelude].flatMap(namesIn))
  const fromFile = (path: string) => relative(virtual, join(root, 'dist', path.replace(/\.ts$/, '.js'))).split(sep).join('/')
  const imports = (names: Iterable<string>, path: string) => {
    const wanted = [...names].filter((n) => !taken.has(n))
    wanted.forEach((n) => taken.add(n))
    if (wanted.length > 0) add(`import { ${wanted.join(', ')} } from '${fromFile(path)}'`)
  }
  for (const i of own) add(e.code[i]!, e.lines[i])
  imports(publicApi, 'src/index.ts')
  imports(exportsOf(join(root, e.file)), e.file)
  for (const l of prelude) add(l)
  add('export async function example() {')
  if (special.before !== undefined) add(special.before)
  e.code.forEach((c, i) => { if (!own.includes(i)) add(c, e.lines[i]) })
  if (special.after !== undefined) add(special.after)
  add('}')
  return { text: lines.join('\n') + '\n', origin }
}

function sourcesIn(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => `${dir}/${f.split(sep).join('/')}`)
    .sort()
}

const examples = ['src', 'routes', 'bin'].flatMap(sourcesIn).flatMap((f) => examplesOf(f, readFileSync(join(root, f), 'utf8')))
const publicApi = exportsOf(join(root, 'src', 'index.ts'))
const modules = new Map(examples.map((e, n) => [join(virtual, `example-${n}.ts`), { example: e, ...moduleOf(e, publicApi) }]))

t.test('the extractor', async (t) => {
  const ex = examplesOf('x.ts', [
    '/**',
    ' * Does x.',
    ' * @example one(1)',
    ' * @example',
    ' * ```ts',
    ' * two(2)',
    ' *   .three()',
    ' * ```',
    ' *',
    ' * @param a what',
    ' */',
    '/** @example four() */'
  ].join('\n'))
  t.same(ex, [
    { file: 'x.ts', tag: 3, nth: 1, lines: [3], code: ['one(1)'] },
    { file: 'x.ts', tag: 4, nth: 2, lines: [6, 7], code: ['two(2)', '  .three()'] },
    { file: 'x.ts', tag: 12, nth: 3, lines: [12], code: ['four()'] }
  ])
})

t.test('every @example in src/, routes/ and bin/ compiles against the built types', async (t) => {
  // An extractor that finds nothing would pass every check below.
  t.ok(examples.length > 30, `${examples.length} examples found`)
  t.ok(examples.every((e) => e.code.length > 0), 'no example is empty')

  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')) } })!
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: true,
    skipLibCheck: true,
    incremental: false,
    declaration: false,
    sourceMap: false,
    // An example names what it shows; it need not use every name, nor say which imports are types.
    noUnusedLocals: false,
    noUnusedParameters: false,
    verbatimModuleSyntax: false
  }
  const host = ts.createCompilerHost(options)
  const { getSourceFile, fileExists, readFile, directoryExists } = host
  host.getSourceFile = (name, version, ...rest) => {
    const m = modules.get(name)
    return m === undefined ? getSourceFile.call(host, name, version, ...rest) : ts.createSourceFile(name, m.text, version)
  }
  host.fileExists = (name) => modules.has(name) || fileExists.call(host, name)
  host.readFile = (name) => modules.get(name)?.text ?? readFile.call(host, name)
  host.directoryExists = (name) => name === virtual || (directoryExists?.call(host, name) ?? true)

  const program = ts.createProgram({ rootNames: [...modules.keys()], options, host })
  t.same([...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')), [], 'the options are sound')
  for (const [name, m] of modules) {
    const at = `${m.example.file}:${m.example.tag}`
    const source = program.getSourceFile(name)!
    const problems = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
      const line = d.start === undefined ? undefined : source.getLineAndCharacterOfPosition(d.start).line
      const from = line === undefined ? undefined : m.origin[line]
      const where = from !== undefined ? `${m.example.file}:${from}` : `${at} (the test's own line: ${line === undefined ? '' : m.text.split('\n')[line]})`
      return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`
    })
    // One failure per message, named by where it is: easier to read than a diff of a list.
    if (problems.length === 0) t.pass(at)
    for (const problem of problems) t.fail(problem)
  }
})
