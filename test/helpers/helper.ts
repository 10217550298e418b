import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { Test } from 'tap'
import { createDemoServer } from '../../src/demo/catalogue.js'
import type { McpServer } from '../../src/core/mcp-server.js'
import { buildServer, type BuildServerOptions } from '../../src/server.js'
import type { Store } from '../../src/store/types.js'
import { CallContext } from '../../src/core/call-context.js'
import { ANONYMOUS } from '../../src/core/request-context.js'
import { LATEST_VERSION } from '../../src/protocol.js'

const silent = { debug() {}, info() {}, warn() {}, error() {} }

/** A 2026-07-28 call's context as a face hands it to the core: anonymous, silent, no deadline. */
export function coreContext(mcp: McpServer, clientCapabilities?: Record<string, unknown>): CallContext {
  return new CallContext(
    { requestId: 'r', protocolVersion: LATEST_VERSION, era: 'modern', meta: undefined, clientCapabilities, principal: ANONYMOUS, log: silent, deadline: Infinity },
    mcp.queue
  )
}

export interface Built {
  app: FastifyInstance
  mcp: McpServer
}

/** A demo server per test (or the given catalogue), closed when the test ends. */
export async function build(t: Test, options: Partial<BuildServerOptions> = {}): Promise<Built> {
  const mcp = options.mcp ?? createDemoServer()
  const app = await buildServer({ logger: false, ...options, mcp })
  t.teardown(() => app.close())
  await app.ready()
  return { app, mcp }
}

/** Inject and parse: status, headers and the JSON body (undefined when there is none). */
export async function call(
  app: FastifyInstance,
  opts: InjectOptions
): Promise<{ status: number; headers: LightMyRequestResponse['headers']; body: any; raw: string }> {
  const res = await app.inject(opts)
  return {
    status: res.statusCode,
    headers: res.headers,
    body: res.payload === '' ? undefined : JSON.parse(res.payload),
    raw: res.payload
  }
}

export const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json' }
})

/** {@link json} from a 2025-11-25 client: for the methods 2026-07-28 removed (`/logLevel`, `/resources/subscribe`). */
export const legacyJson = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' }
})

/** The demo catalogue's tools, in registration order (src/demo/). */
export const DEMO_TOOLS = ['echo', 'add', 'get_weather', 'update_work_item', 'slow_compute', 'failing_job', 'needs_input_task', 'long_sum', 'echo_app']

/**
 * A sealed token (JWE compact: header..iv.ciphertext.tag) with one ciphertext byte changed. The change
 * is in the first character of the ciphertext, whose six bits are all data: editing a token's last
 * characters can touch only base64url padding bits, which decode to the same bytes and so seal fine.
 */
export function tamper(token: string): string {
  const parts = token.split('.')
  const ciphertext = parts[3]!
  parts[3] = (ciphertext[0] === 'A' ? 'B' : 'A') + ciphertext.slice(1)
  return parts.join('.')
}

/**
 * Count the server-to-client requests a store queues (wrapping its `enqueueRequest`); the function
 * returned waits until at least `n` have been queued. A test waits for the request, not a while.
 */
export function queuedRequests(store: Store): (n: number) => Promise<void> {
  const enqueue = store.mailbox.enqueueRequest.bind(store.mailbox)
  let queued = 0
  store.mailbox.enqueueRequest = async (...args) => {
    await enqueue(...args)
    queued++
  }
  return async (n) => {
    while (queued < n) await new Promise((resolve) => setTimeout(resolve, 2))
  }
}
