import { connect } from 'node:net'
import { once } from 'node:events'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { AppSlot } from '../../src/http/app-slot.js'

/** An app on the slot's server whose `GET /slow/{n}` answers `name` when `release(n)` is called. */
async function appOn(slot: AppSlot, name: string, closed: string[]) {
  const waiting = new Map<string, () => void>()
  const arrivals = new Map<string, () => void>()
  const app = Fastify({ serverFactory: slot.factory })
  app.get('/slow/:n', async (request) => {
    const { n } = request.params as { n: string }
    await new Promise<void>((resolve) => {
      waiting.set(n, resolve)
      arrivals.get(n)?.()
    })
    return name
  })
  app.get('/fast', async () => name)
  app.addHook('onClose', async () => void closed.push(name))
  await app.ready()
  return {
    app: app as FastifyInstance,
    release: (n: string) => waiting.get(n)!(),
    arrived: (n: string) => (waiting.has(n) ? Promise.resolve() : new Promise<void>((resolve) => arrivals.set(n, resolve)))
  }
}

/** Raw HTTP/1.1 on one connection: what it has read so far. */
function rawConnection(port: number) {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  socket.on('data', (d: Buffer) => (text += String(d)))
  return { socket, read: () => text, send: (path: string) => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`) }
}

t.test('AppSlot: the newest app takes new requests; the one before closes at once and finishes its own', async (t) => {
  const slot = new AppSlot({}, '2026-07-28')
  const closed: string[] = []
  const one = await appOn(slot, 'one', closed)
  await slot.swap(one.app)
  slot.server.listen(0, '127.0.0.1')
  await once(slot.server, 'listening')
  const base = `http://127.0.0.1:${(slot.server.address() as { port: number }).port}`
  t.teardown(() => void slot.server.close())

  const slow = fetch(`${base}/slow/1`).then((r) => r.text())
  await one.arrived('1')
  const two = await appOn(slot, 'two', closed)
  let swapped = false
  const swap = slot.swap(two.app).then(() => (swapped = true))
  t.equal(await fetch(`${base}/fast`).then((r) => r.text()), 'two', 'a new request goes to the new app')
  while (closed.length === 0) await new Promise((resolve) => setImmediate(resolve))
  t.same(closed, ['one'], 'the app before is closed before its requests end (its streams end at once)')
  t.notOk(swapped, 'the swap waits for the requests the app before has')
  one.release('1')
  t.equal(await slow, 'one', 'which it answers')
  await swap
  t.ok(swapped)
  t.equal(slot.server.listeners('clientError').length, 1, 'one clientError listener, whatever the number of apps')

  // A reload that failed: the app it built is closed, and the serving one serves on.
  const three = await appOn(slot, 'three', closed)
  await slot.discard(three.app)
  t.same(closed, ['one', 'three'])
  t.equal(await fetch(`${base}/fast`).then((r) => r.text()), 'two')
  await slot.discard(undefined)

  // Shutdown: the requests in flight are answered; a new one on a kept-alive connection (while
  // others are still in flight) gets the binding's 503 and the connection closed.
  const port = (slot.server.address() as { port: number }).port
  const a = rawConnection(port)
  const b = rawConnection(port)
  a.send('/slow/a')
  b.send('/slow/b')
  await Promise.all([two.arrived('a'), two.arrived('b')])
  const closing = slot.close()
  two.release('a')
  while (!a.read().endsWith('two')) await new Promise((resolve) => setImmediate(resolve))
  a.send('/fast')
  await once(a.socket, 'close')
  two.release('b')
  await once(b.socket, 'close')
  await closing
  t.same(closed, ['one', 'three', 'two'], 'the current app closed')
  const [first, second] = a.read().split(/(?=HTTP\/1\.1 )/)
  t.match(first, /^HTTP\/1\.1 200 [^]*\r\n\r\ntwo$/, 'the request in flight: answered')
  t.match(second, /^HTTP\/1\.1 503 /, 'the one after: 503')
  t.match(second, /\r\nretry-after: 1\r\n/i)
  t.match(second, /\r\nmcp-protocol-version: 2026-07-28\r\n/i)
  t.match(second, /\r\nmcp-request-id: \S+\r\n/i)
  t.match(second, /\r\nconnection: close\r\n/i)
  t.match(JSON.parse(second!.slice(second!.indexOf('\r\n\r\n') + 4)), { message: 'The server is shutting down: retry on another connection' })
  t.match(b.read(), /^HTTP\/1\.1 200 [^]*\r\n\r\ntwo$/, 'and so is the other in flight')
  t.notOk(slot.server.listening, 'the server is closed')
})

t.test('one McpServer served by two apps in turn (a reload): the first app closing leaves it served by the second', async (t) => {
  const { McpServer } = await import('../../src/core/mcp-server.js')
  const { MemoryStore } = await import('../../src/store/memory.js')
  const { buildServer } = await import('../../src/server.js')
  const mcp = new McpServer({ name: 'shared', version: '1' })
  const store = new MemoryStore()
  t.teardown(() => store.close())
  // What the server announces reaches the store (after the webhooks have seen it).
  const announced: string[] = []
  let heard!: () => void
  const first = new Promise<void>((resolve) => (heard = resolve))
  const broadcast = store.mailbox.broadcast.bind(store.mailbox)
  store.mailbox.broadcast = async (message) => {
    announced.push(message.method)
    heard()
    return broadcast(message)
  }
  const options = { mcp, store, logger: false as const, webhooks: { allowedHosts: ['127.0.0.1:1'] } }
  const before = await buildServer(options)
  await before.ready()
  const after = await buildServer(options)
  await after.ready()
  const seen = mcp.store
  await before.close()
  t.equal(mcp.store, seen, "the store as the second app's webhooks wrap it stays")
  mcp.tool({ name: 'added' }, () => 'added')
  await first
  t.same(announced, ['notifications/tools/list_changed'], 'a change is still announced: the server is still served')
  const doc = (await after.inject({ url: '/openapi.json' })).json() as { paths: Record<string, unknown> }
  t.ok(doc.paths['/tools/added/calls'], "the second app's OpenAPI document follows the change")
  await after.close()
  t.equal(mcp.store, store, 'with both closed, the store as given')
  mcp.tool({ name: 'later' }, () => 'later')
  t.same(announced, ['notifications/tools/list_changed'], 'with both closed: no longer served, nothing announced')
})
