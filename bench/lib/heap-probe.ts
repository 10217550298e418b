import { appendFileSync } from 'node:fs'

/**
 * Preloaded into the soak's server (`node --expose-gc --import .../heap-probe.js`): every
 * HEAP_PROBE_MS (default 5000) it forces a full collection and appends one JSON line to
 * HEAP_PROBE_FILE with the memory then still in use: the JS heap and the memory outside it that
 * JS objects hold (Buffers, ArrayBuffers). What survives a full collection is what the server
 * keeps; RSS also moves with how V8 sizes its heap and how malloc keeps freed pages, so it cannot
 * tell a leak from a heap that has grown to fit the load.
 */
const file = process.env.HEAP_PROBE_FILE
const every = Number(process.env.HEAP_PROBE_MS ?? 5000)
const gc = (globalThis as { gc?: () => void }).gc
if (file !== undefined && gc !== undefined) {
  const start = Date.now()
  const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 100) / 100
  setInterval(() => {
    gc()
    const { heapUsed, external } = process.memoryUsage()
    appendFileSync(file, JSON.stringify({ t: Math.round((Date.now() - start) / 1000), heapMb: mb(heapUsed), externalMb: mb(external) }) + '\n')
  }, every).unref()
}
