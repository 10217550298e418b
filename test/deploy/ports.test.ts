import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { freePort, portRange, reservePort } from '../../bench/lib/ports.js'

// The ports tests and the bench give their child servers: below the kernel's ephemeral range, so
// that no other process's bind to port 0 (every in-process test server) can take one between its
// release and the child's bind.

t.test('the range: just below the ephemeral range, or none where it cannot be read', async (t) => {
  const dir = t.testdir()
  const file = (text: string) => {
    const path = join(dir, String(Math.random()))
    writeFileSync(path, text)
    return path
  }
  t.same(portRange(file('32768\t60999\n')), [20768, 32767], 'the 12,000 ports below it')
  t.same(portRange(file('15000 60999')), [10000, 14999], 'not below 10,000')
  t.equal(portRange(file('10500 60999')), undefined, 'too few left: the kernel picks')
  t.equal(portRange(file('')), undefined, 'unreadable')
  t.equal(portRange(join(dir, 'missing')), undefined, 'not Linux')
})

t.test('reserved ports are outside the range the kernel picks from, distinct, and held', async (t) => {
  const range = portRange()
  t.ok(range !== undefined, 'this machine (Linux) has an ephemeral range')
  const held = await Promise.all(Array.from({ length: 20 }, () => reservePort()))
  t.teardown(() => Promise.all(held.map((h) => h.release())))
  const ports = held.map((h) => h.port)
  t.equal(new Set(ports).size, ports.length, 'distinct')
  t.ok(ports.every((p) => p >= range![0] && p <= range![1]), `all in ${range!.join('-')}`)
  // Held: nobody else can bind it.
  const other = createServer().listen(ports[0], '127.0.0.1')
  const [err] = (await once(other, 'error')) as [NodeJS.ErrnoException]
  t.equal(err.code, 'EADDRINUSE')
  // Released: its server binds it.
  await held[0]!.release()
  await held[0]!.release() // a second release does nothing
  const server = createServer().listen(ports[0], '127.0.0.1')
  await once(server, 'listening')
  server.close()
  // And a bind to port 0 never lands in the range.
  const kernel = createServer().listen(0, '127.0.0.1')
  await once(kernel, 'listening')
  const picked = (kernel.address() as { port: number }).port
  kernel.close()
  t.ok(picked > range![1], `the kernel's pick (${picked}) is above it`)
  // A range whose one port is taken: the kernel picks instead.
  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => taken.close())
  const busy = (taken.address() as { port: number }).port
  const instead = await reservePort([busy, busy])
  await instead.release()
  t.ok(instead.port !== busy && instead.port > range![1], `taken: ${busy}, the kernel's ${instead.port} instead`)
  const free = await freePort()
  t.ok(free >= range![0] && free <= range![1], 'freePort too')
})
