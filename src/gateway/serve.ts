import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { apiKeyRing, type ApiKey } from '../auth/api-keys.js'
import { authSetup } from '../auth/oauth.js'
import { hostOriginPolicy } from '../auth/origin.js'
import { corsFromConfig, hostOriginFromConfig, serverCardFromConfig } from '../config-options.js'
import mcpCors from '../plugins/cors.js'
import { apiKeysFromConfig, oauthFromConfig, type Config } from '../config.js'
import type { Logger } from '../core/request-context.js'
import { serve, serverOptionsFromConfig, type Mount } from '../main.js'
import { companion } from '../store/compose.js'
import { createStore } from '../store/index.js'
import { ConfigurationError } from '../errors.js'
import { watchCallers } from './connection.js'
import { Gateway } from './gateway.js'
import type { Served, VirtualSpec } from './options.js'
import { gatewayStore } from './store.js'
import { VirtualServer } from './virtual.js'
import type { RoundRelay } from './relay.js'

// pino's numbers, so that these lines read like the app's own.
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity }

/**
 * A log for the time before the app exists (connecting to the upstreams happens first): JSON lines
 * on stderr at LOG_LEVEL, then the app's own logger once it is built.
 */
export class LateLogger implements Logger {
  target: Logger | undefined
  constructor(readonly level: string) {}
  #write(level: string, obj: unknown, msg?: string): void {
    if (this.target !== undefined) return this.target[level as keyof Logger](obj, msg)
    if (LEVELS[level]! < LEVELS[this.level]!) return
    process.stderr.write(JSON.stringify({ level: LEVELS[level], time: Date.now(), ...(obj as object), msg }) + '\n')
  }

  debug(obj: unknown, msg?: string): void {
    this.#write('debug', obj, msg)
  }

  info(obj: unknown, msg?: string): void {
    this.#write('info', obj, msg)
  }

  warn(obj: unknown, msg?: string): void {
    this.#write('warn', obj, msg)
  }

  error(obj: unknown, msg?: string): void {
    this.#write('error', obj, msg)
  }
}

/**
 * `mcp-pure-http gateway`: each upstream as a catalogue of its own (with its own store, so that one
 * mount's clients never see another's queues), on HOST:PORT with every `MCP_*` setting, and
 * `apiKeys` (`--api-key`) besides `MCP_API_KEYS`.
 */
export async function serveGateway(served: readonly Served[], apiKeys: readonly ApiKey[], virtual: readonly VirtualSpec[] = []): Promise<FastifyInstance> {
  const gateways: Gateway[] = []
  const virtuals: VirtualServer[] = []
  let relay: RoundRelay | undefined
  let log: LateLogger
  const instance = randomUUID()
  const make = async (config: Config): Promise<Mount[]> => {
    log = new LateLogger(config.LOG_LEVEL)
    // The forwarded header is read before authentication takes it off the request: it would carry
    // the gateway's own key upstream.
    if (apiKeysFromConfig(config, apiKeys) !== undefined && served.some((s) => 'url' in s.spec && s.spec.forwardAuthorization === true)) {
      throw new ConfigurationError('gateway: forwardAuthorization (--forward-authorization) would send the API keys clients give this gateway upstream: use one or the other')
    }
    // The token exchanged is one this gateway verified: without OAuth of its own, anything a caller sends would go to the authorization server.
    const exchange = served.find((s) => 'url' in s.spec && s.spec.tokenExchange !== undefined)
    if (exchange !== undefined && oauthFromConfig(config) === undefined) {
      throw new ConfigurationError(`gateway: ${exchange.name} has tokenExchange, which exchanges the OAuth access tokens this gateway verifies: set MCP_OAUTH_AUDIENCE, MCP_OAUTH_ISSUER and MCP_OAUTH_JWKS_URL`)
    }
    const mounts: Mount[] = []
    const prefix = config.MCP_REDIS_PREFIX ?? 'mcp:'
    for (const s of served) {
      const store = createStore(s.prefix === undefined ? config : { ...config, MCP_REDIS_PREFIX: `${prefix}${s.name}:` })
      relay ??= await companion(store, 'roundRelay', 'The gateway')
      const gw = await Gateway.start({
        name: s.name,
        spec: s.spec,
        required: s.required,
        ...s.tuning,
        log,
        server: serverOptionsFromConfig(config),
        relay,
        instance: `${instance}${s.prefix ?? ''}`
      })
      gateways.push(gw)
      // One server that cannot start is nothing to serve: say why and exit non-zero. With --config
      // the others serve, and GET / and /ready name the one that failed.
      if (s.prefix === undefined && gw.upstream.state === 'failed') {
        await Promise.all(gateways.map((g) => g.close()))
        throw new ConfigurationError(`gateway: the upstream server ${s.name} could not start: ${gw.upstream.lastError}`)
      }
      if (s.mounted) mounts.push({ mcp: gw.mcp, store: gw.wrapStore(store, gateways), ...(s.prefix === undefined ? {} : { prefix: s.prefix }) })
    }
    for (const v of virtual) {
      const vs = new VirtualServer(v, gateways, serverOptionsFromConfig(config), log)
      virtuals.push(vs)
      const store = createStore({ ...config, MCP_REDIS_PREFIX: `${prefix}${v.name}:` })
      mounts.push({ mcp: vs.mcp, store: gatewayStore(store, { mcp: vs.mcp, holder: v.name, upstreamOf: (uri) => vs.upstreamOf(uri) }, gateways, log), prefix: v.prefix })
    }
    return mounts
  }
  return serve(make, async (app, config) => {
    log.target = app.log
    if (served.some((s) => 'url' in s.spec && (s.spec.forwardAuthorization === true || s.spec.tokenExchange !== undefined))) {
      const keys = apiKeysFromConfig(config, apiKeys)
      watchCallers(app.server, keys === undefined ? undefined : apiKeyRing(keys))
    }
    app.addHook('onClose', async () => {
      await Promise.all(gateways.map((g) => g.close()))
      await relay?.close?.()
    })
    if (served[0]!.prefix === undefined) return
    // With several mounts, the root lists them and their state: their catalogues' names, so with
    // OAuth or API keys on it needs a token or key like the mounts do. One audience serves them
    // all, so the first mount's challenge (its RFC 9728 metadata URL) is right here too.
    // Experimental: each mount's Server Card, listed beside it (the AI Catalog lists them too).
    const cards = serverCardFromConfig(config) !== false
    const { authenticate } = authSetup({ oauth: oauthFromConfig(config), apiKeys: apiKeysFromConfig(config, apiKeys) }, served[0]!.prefix)
    // What the mounts do, in their order: the Host and Origin check (DNS rebinding), CORS (a
    // preflight is answered there), then the token. In a context of its own, so that its hooks stay here.
    const policy = hostOriginPolicy({ loopbackByDefault: true, ...hostOriginFromConfig(config) }, app.server)
    await app.register(async (root) => {
      if (policy.check !== undefined) root.addHook('onRequest', policy.check)
      await root.register(mcpCors, { ...corsFromConfig(config), policy })
      const onRequest = authenticate === undefined ? [] : [async (request: FastifyRequest, reply: FastifyReply) => void (await authenticate(request, reply))]
      root.get('/', { schema: { hide: true }, onRequest }, async () => ({
        servers: served.map((s, i) => ({
          name: s.name,
          // An upstream served only through virtual servers has no path of its own.
          ...(s.mounted ? { path: s.prefix } : {}),
          state: gateways[i]!.upstream.state,
          ...(gateways[i]!.upstream.state === 'up' ? {} : { reason: gateways[i]!.upstream.lastError }),
          required: s.required,
          serverInfo: gateways[i]!.mcp.serverInfo,
          ...(cards && s.mounted ? { serverCard: `${s.prefix}/mcp/server-card` } : {})
        })),
        ...(virtuals.length === 0
          ? {}
          : {
              virtualServers: virtuals.map((vs, i) => {
                const down = vs.sources.filter((g) => g.upstream.state !== 'up')
                return {
                  name: virtual[i]!.name,
                  path: virtual[i]!.prefix,
                  ...(cards ? { serverCard: `${virtual[i]!.prefix}/mcp/server-card` } : {}),
                  servers: vs.sources.map((g) => g.name),
                  state: down.length === 0 ? 'up' : 'degraded',
                  ...(down.length === 0 ? {} : { reason: down.map((g) => `${g.name} is ${g.upstream.state}: ${g.upstream.lastError}`).join('; ') })
                }
              })
            })
      }))
    })
  }, apiKeys)
}
