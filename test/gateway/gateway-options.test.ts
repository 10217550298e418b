/* eslint-disable no-template-curly-in-string -- `${VAR}` in a config file's strings is what these tests are about */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parseGatewayArgs } from '../../src/gateway/options.js'

t.test('command, url and header arguments', async (t) => {
  t.same(parseGatewayArgs(['--', 'npx', '-y', 'some-server']).served, [
    { name: 'npx', prefix: undefined, spec: { command: 'npx', args: ['-y', 'some-server'] }, required: true, tuning: {}, mounted: true }
  ])
  t.same(parseGatewayArgs(['--url', 'https://example.com/mcp', '--header', 'Authorization: Bearer abc:def']).served, [
    { name: 'example.com', prefix: undefined, spec: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer abc:def' } }, required: true, tuning: {}, mounted: true }
  ])
  t.throws(() => parseGatewayArgs(['--url', 'http://a/mcp', '--', 'x']), /Give exactly one of/)
  t.throws(() => parseGatewayArgs([]), /Give exactly one of/)
  t.throws(() => parseGatewayArgs(['--url']), /--url needs a value/)
  t.throws(() => parseGatewayArgs(['--bogus', 'x']), /Unknown option --bogus/)
  t.throws(() => parseGatewayArgs(['--url', 'http://x/mcp', '--header', 'nocolon']), /is not "Name: value"/)
  t.throws(() => parseGatewayArgs(['--config', '/nonexistent.json']), /--config \/nonexistent.json: ENOENT/)
  t.same(parseGatewayArgs(['--forward-authorization', '--url', 'http://a/mcp', '--task-after-ms', '0', '--max-open-rounds', '2']).served, [
    { name: 'a', prefix: undefined, spec: { url: 'http://a/mcp', headers: {}, forwardAuthorization: true }, required: true, tuning: { taskAfterMs: 0, maxOpenRounds: 2 }, mounted: true }
  ])
  t.throws(() => parseGatewayArgs(['--forward-authorization', '--', 'x']), /applies to --url only/)
  t.same(parseGatewayArgs(['--url', 'http://a/sse', '--sse', '--header', 'X-Key: k']).served[0]!.spec, { url: 'http://a/sse', headers: { 'X-Key': 'k' }, sse: true }, 'the HTTP+SSE transport')
  t.same(parseGatewayArgs(['--sse', '--forward-authorization', '--url', 'http://a/sse']).served[0]!.spec, { url: 'http://a/sse', headers: {}, forwardAuthorization: true, sse: true })
  t.throws(() => parseGatewayArgs(['--sse', '--', 'x']), /--sse applies to --url only \(in a config file: "type": "sse"\)/)
  t.throws(() => parseGatewayArgs(['--max-open-rounds', '0', '--', 'x']), /--max-open-rounds 0 is not an integer of at least 1/)
  t.throws(() => parseGatewayArgs(['--task-after-ms', '1.5', '--', 'x']), /--task-after-ms 1.5 is not an integer of at least 0/)
  t.same(parseGatewayArgs(['--timeout-ms', '0', '--', 'x']).served[0]!.tuning, { requestTimeoutMs: 0 }, '0: no deadline')
  t.same(parseGatewayArgs(['--timeout-ms', '2500', '--', 'x']).served[0]!.tuning, { requestTimeoutMs: 2500 })
  t.throws(() => parseGatewayArgs(['--timeout-ms', '-1', '--', 'x']), /--timeout-ms -1 is not an integer from 0 to 2000000000/)
  t.throws(() => parseGatewayArgs(['--timeout-ms', '3000000000', '--', 'x']), /--timeout-ms 3000000000 is not an integer from 0 to 2000000000/)
})

t.test('--config: the mcpServers file, checked, with ${VAR} from the environment', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-opts-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string, content: string) => {
    writeFileSync(join(dir, name), content)
    return join(dir, name)
  }
  const good = file(
    'good.json',
    JSON.stringify({
      mcpServers: {
        local: { command: 'node', args: ['s.js'], env: { TOKEN: '${SECRET}', PLAIN: 'x' }, cwd: '/tmp' },
        plain: { command: 'node', taskAfterMs: 100, maxOpenRounds: 3, timeoutMs: 7000 },
        remote: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${SECRET}' }, type: 'http', required: false, forwardAuthorization: true },
        old: { type: 'sse', url: 'https://example.com/sse', headers: { 'X-Key': '${SECRET}' } }
      }
    })
  )
  t.same(parseGatewayArgs(['--config', good, '--task-after-ms', '50'], { SECRET: 's3' }).served, [
    { name: 'local', prefix: '/local', spec: { command: 'node', args: ['s.js'], env: { TOKEN: 's3', PLAIN: 'x' }, cwd: '/tmp' }, required: true, tuning: { taskAfterMs: 50 }, mounted: true },
    { name: 'plain', prefix: '/plain', spec: { command: 'node', args: [], env: {} }, required: true, tuning: { taskAfterMs: 100, maxOpenRounds: 3, requestTimeoutMs: 7000 }, mounted: true },
    {
      name: 'remote',
      prefix: '/remote',
      spec: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer s3' }, forwardAuthorization: true },
      required: false,
      tuning: { taskAfterMs: 50 },
      mounted: true
    },
    {
      name: 'old',
      prefix: '/old',
      spec: { url: 'https://example.com/sse', headers: { 'X-Key': 's3' }, forwardAuthorization: false, sse: true },
      required: true,
      tuning: { taskAfterMs: 50 },
      mounted: true
    }
  ])
  t.throws(() => parseGatewayArgs(['--config', good], {}), /local\.env\.TOKEN: \$\{SECRET\} is not set/)
  t.throws(() => parseGatewayArgs(['--config', file('bad.json', '{')]), /bad\.json: .*JSON/)
  t.throws(() => parseGatewayArgs(['--config', file('empty.json', '{"mcpServers":{}}')]), /mcpServers is empty/)
  t.throws(() => parseGatewayArgs(['--config', file('name.json', '{"mcpServers":{"a/b":{"command":"x"}}}')]), /name\.json: \/mcpServers/)
  t.throws(() => parseGatewayArgs(['--config', file('shape.json', '{"servers":{}}')]), /shape\.json: \//)
  t.throws(() => parseGatewayArgs(['--config', file('root.json', '[]')]), /root\.json: \/: /)
  t.throws(() => parseGatewayArgs(['--url', 'ftp://x']), /not an http\(s\) URL/)
  t.throws(() => parseGatewayArgs(['--config', file('sse.json', '{"mcpServers":{"a":{"type":"sse","command":"x"}}}')]), /sse\.json: \/mcpServers\/a/, 'an SSE server has a url')
  t.throws(() => parseGatewayArgs(['--config', file('type.json', '{"mcpServers":{"a":{"type":"websocket","url":"http://a/"}}}')]), /type\.json: \/mcpServers\/a/)
  t.throws(() => parseGatewayArgs(['--config', file('timeout.json', '{"mcpServers":{"a":{"command":"x","timeoutMs":-5}}}')]), /timeout\.json: \/mcpServers\/a/)
})

t.test('--config: virtualServers, checked against mcpServers', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-virtual-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = (body: Record<string, unknown>) => {
    const path = join(dir, `${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(path, JSON.stringify({ mcpServers: { a: { command: 'x' }, b: { command: 'y', mount: false } }, ...body }))
    return ['--config', path]
  }
  const team = {
    include: ['a/*', 'b/read_*'],
    exclude: ['a/danger'],
    rename: { 'a/echo': 'say' },
    names: '{server}-{name}',
    descriptions: { 'b/read_file': 'Read a file' },
    scopes: { 'b/*': ['files:read'] }
  }
  const parsed = parseGatewayArgs(config({ virtualServers: { team } }))
  t.same(parsed.virtual, [{ name: 'team', prefix: '/team', ...team }])
  t.same(parsed.served.map((s) => [s.name, s.mounted]), [['a', true], ['b', false]], '"mount": false')
  t.same(parseGatewayArgs(config({ virtualServers: { all: { include: ['*/*'] } } })).virtual[0], {
    name: 'all',
    prefix: '/all',
    include: ['*/*'],
    exclude: [],
    rename: {},
    names: undefined,
    descriptions: {},
    scopes: {}
  }, 'defaults; `*` as the server includes every server')
  for (const [body, message] of [
    [{ virtualServers: { a: { include: ['a/*'] } } }, /virtualServers\.a: the name of an mcpServers entry/],
    [{ virtualServers: { v: { include: ['c/*'] } } }, /virtualServers\.v: c\/\* names no server of mcpServers/],
    [{ virtualServers: { v: { include: ['a/*'], rename: { 'a/e*': 'x' } } } }, /a\/e\*: rename and descriptions take one entry's key/],
    [{ virtualServers: { v: { include: ['a/*'], names: '{server}' } } }, /names must contain \{name\}/],
    [{ virtualServers: { v: { include: ['a/*'] } } }, /mcpServers\.b has "mount": false and no virtual server includes it/],
    [{ virtualServers: { v: { include: ['nokey'] } } }, /\/virtualServers\/v\/include\/0/],
    [{ virtualServers: { v: { include: ['a/*'], rename: { 'a/x': 'bad name' } } } }, /\/virtualServers\/v\/rename/],
    [{ virtualServers: { v: { include: ['a/*'], extra: 1 } } }, /\/virtualServers\/v/]
  ] as const) {
    t.throws(() => parseGatewayArgs(config(body)), message)
  }
})

t.test('--config tokenExchange: checked, ${VAR} expanded, never with forwardAuthorization', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-exchange-opts-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const config = (name: string, tokenExchange: unknown, extra: Record<string, unknown> = {}) => {
    writeFileSync(join(dir, name), JSON.stringify({ mcpServers: { tickets: { url: 'https://tickets.example.com/mcp', tokenExchange, ...extra } } }))
    return join(dir, name)
  }
  const exchange = { tokenUrl: 'https://as.example.com/token', clientId: 'gw', clientSecret: '${TX_SECRET}', audience: 'https://tickets.example.com', scope: 'read' }
  t.same(parseGatewayArgs(['--config', config('good.json', exchange)], { TX_SECRET: 's3' }).served[0]!.spec, {
    url: 'https://tickets.example.com/mcp',
    headers: {},
    forwardAuthorization: false,
    tokenExchange: { tokenUrl: 'https://as.example.com/token', clientId: 'gw', clientSecret: 's3', audience: 'https://tickets.example.com', scope: 'read' }
  })
  t.same(parseGatewayArgs(['--config', config('loopback.json', { ...exchange, tokenUrl: 'http://127.0.0.1:9000/token' })], { TX_SECRET: 's3' }).served[0]!.spec, {
    url: 'https://tickets.example.com/mcp',
    headers: {},
    forwardAuthorization: false,
    tokenExchange: { ...exchange, tokenUrl: 'http://127.0.0.1:9000/token', clientSecret: 's3' }
  }, 'http on a loopback host (tests, a sidecar)')
  t.throws(() => parseGatewayArgs(['--config', config('unset.json', exchange)], {}), /tickets\.tokenExchange\.clientSecret: \$\{TX_SECRET\} is not set/)
  t.throws(
    () => parseGatewayArgs(['--config', config('plain.json', { ...exchange, tokenUrl: 'http://as.example.com/token' })], { TX_SECRET: 's3' }),
    /tickets\.tokenExchange\.tokenUrl must use https \(http only on a loopback host\)/
  )
  t.throws(() => parseGatewayArgs(['--config', config('nourl.json', { ...exchange, tokenUrl: 'token' })], { TX_SECRET: 's3' }), /tickets\.tokenExchange\.tokenUrl is not a URL/)
  t.throws(() => parseGatewayArgs(['--config', config('missing.json', { tokenUrl: 'https://as.example.com/token', clientId: 'gw' })]), /missing\.json: \/mcpServers\/tickets/)
  t.throws(() => parseGatewayArgs(['--config', config('extra.json', { ...exchange, clientSecretFile: 'x' })], { TX_SECRET: 's3' }), /extra\.json: \/mcpServers\/tickets/)
  t.throws(
    () => parseGatewayArgs(['--config', config('both.json', exchange, { forwardAuthorization: true })], { TX_SECRET: 's3' }),
    /tickets\.tokenExchange: give forwardAuthorization or tokenExchange, not both/
  )
})
