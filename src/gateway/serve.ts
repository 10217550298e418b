import closeWithGrace from 'close-with-grace'
import { randomUUID } from 'node:crypto'
import { unwatchFile, watchFile } from 'node:fs'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { apiKeyRing, type ApiKey } from '../auth/api-keys.js'
import { authSetup } from '../auth/oauth.js'
import { hostOriginPolicy } from '../auth/origin.js'
import { corsFromConfig, hostOriginFromConfig, serverCardFromConfig } from '../config-options.js'
import mcpCors from '../plugins/cors.js'
import { apiKeysFromConfig, loadConfig, oauthFromConfig, type Config } from '../config.js'
import type { Logger } from '../core/request-context.js'
import { appFor, serverOptionsFromConfig, telemetryFor, type Mount, type Telemetry } from '../main.js'
import { AppSlot } from '../http/app-slot.js'
import { httpServerOptions, warnIfExposed } from '../server.js'
import { companion } from '../store/compose.js'
import { createStore } from '../store/index.js'
import type { Store } from '../store/types.js'
import { ConfigurationError, messageOf } from '../errors.js'
import { watchCallers } from './connection.js'
import { Gateway } from './gateway.js'
import type { GatewayArgs, Served, VirtualSpec } from './options.js'
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

/** An upstream of the running configuration: its entry in the file, its gateway, and its mount's store. */
interface Upstreamed {
  served: Served
  gw: Gateway
  /** The store under the mount's prefix: kept across reloads while the name stays. */
  raw: Store
  /** `raw` as the mount's routes see it (see {@link gatewayStore}). */
  store: Store
}

interface Virtualized {
  spec: VirtualSpec
  vs: VirtualServer
  raw: Store
  store: Store
}

/** What one reading of the configuration serves, by name in the file's order. */
interface Running {
  upstreams: Map<string, Upstreamed>
  virtuals: Map<string, Virtualized>
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/**
 * `mcp-pure-http gateway`: each upstream as a catalogue of its own (with its own store, so that one
 * mount's clients never see another's queues), on HOST:PORT with every `MCP_*` setting, and
 * `apiKeys` (`--api-key`) besides `MCP_API_KEYS`. With `reread` (`--config`), the file is read again
 * on SIGHUP and when it changes: see {@link GatewayHost.reload}.
 */
export async function serveGateway(args: GatewayArgs, reread?: () => GatewayArgs): Promise<GatewayHost> {
  return GatewayHost.start(args, reread)
}

/**
 * The gateway's process: its upstreams and virtual servers, and the app that serves them on one
 * listening server ({@link AppSlot}). A reload starts what is new or changed, builds the next app
 * beside the serving one with the unchanged upstreams (their children, calls, rounds and stores)
 * shared, swaps it in, and then ends what is gone once its requests are answered (or the shutdown
 * grace has passed).
 */
export class GatewayHost {
  readonly #config: Config
  readonly #keys: ApiKey[] | undefined
  readonly #log: LateLogger
  readonly #slot: AppSlot
  readonly #instance = randomUUID()
  readonly #reread: (() => GatewayArgs) | undefined
  #telemetry: Telemetry | undefined
  #relay: RoundRelay | undefined
  /** The store whose companion the relay is: kept to the end, whatever a reload removes. */
  #relayStore: Store | undefined
  #live: Running = { upstreams: new Map(), virtuals: new Map() }
  /** The upstreams served now, for the readiness ping of every mount's store (updated in place). */
  readonly #gateways: Gateway[] = []
  #callersWatched = false
  #unwatch: (() => void) | undefined
  #reloads: Promise<void> = Promise.resolve()
  #loaded = { at: new Date().toISOString(), failed: undefined as { at: string; reason: string } | undefined }

  private constructor(config: Config, apiKeys: readonly ApiKey[], reread: (() => GatewayArgs) | undefined) {
    this.#config = config
    this.#reread = reread
    // Before anything starts: keys that clash between the sources stop the start here.
    this.#keys = apiKeysFromConfig(config, apiKeys)
    this.#log = new LateLogger(config.LOG_LEVEL)
    this.#slot = new AppSlot(httpServerOptions(config.MCP_REQUEST_TIMEOUT_MS), config.MCP_DEFAULT_PROTOCOL_VERSION)
  }

  static async start(args: GatewayArgs, reread?: () => GatewayArgs): Promise<GatewayHost> {
    const host = new GatewayHost(loadConfig(), args.apiKeys, reread)
    const config = host.#config
    const next = await host.#prepare(args)
    let app: FastifyInstance
    try {
      host.#telemetry = await telemetryFor(config)
      app = await host.#build(next, args)
      /* c8 ignore start -- nothing the file's check lets through fails here (a defect would): its children end before the exit */
    } catch (err) {
      await host.#end(next, host.#live)
      throw err
    }
    /* c8 ignore stop */
    host.#log.target = app.log
    host.#use(next)
    await host.#slot.swap(app)
    // SIGTERM/SIGINT: stop accepting (keep-alive requests get 503), let in-flight requests finish for
    // up to the grace period, then exit. Shared state stays in the store for the other instances.
    // With a file to read again, SIGHUP reloads it (as daemons do) instead.
    const skip: closeWithGrace.AllEvents[] = reread === undefined ? [] : ['SIGHUP']
    closeWithGrace({ delay: config.MCP_SHUTDOWN_GRACE_MS, logger: app.log, skip }, async ({ signal, err }) => {
      app.log.info({ signal, err }, 'shutting down')
      await host.close()
    })
    await new Promise<void>((resolve, reject) => {
      host.#slot.server.once('error', reject)
      host.#slot.server.listen({ host: config.HOST, port: config.PORT }, () => resolve())
    })
    app.log.info({ address: host.#slot.server.address() }, 'Server listening')
    warnIfExposed(host.#slot.server, app.log, { loopbackByDefault: true, ...hostOriginFromConfig(config) })
    if (reread !== undefined) host.#watch(args.configFile!)
    return host
  }

  /** Reload on SIGHUP, and when `file` changes. */
  #watch(file: string): void {
    const reload = () => void this.reload()
    process.on('SIGHUP', reload)
    // Polled (once a second): it follows a file replaced by a rename or a symlink swap, as editors
    // and Kubernetes' ConfigMaps do, where an fs.watch of the file loses it.
    watchFile(file, { interval: 1000, persistent: false }, reload)
    this.#unwatch = () => {
      process.removeListener('SIGHUP', reload)
      unwatchFile(file, reload)
    }
  }

  /**
   * Read the configuration file again and serve it: servers added start, removed ones stop, changed
   * ones (any field of their entry) are replaced; the others go on untouched, their calls, rounds,
   * children and subscriptions included. A file that cannot be read or served changes nothing: the
   * reason is logged and shown on `GET /`. One reload at a time, in the order asked.
   */
  reload(): Promise<void> {
    this.#reloads = this.#reloads.then(() => this.#reloadOnce())
    return this.#reloads
  }

  async #reloadOnce(): Promise<void> {
    const log = this.#log
    const before = this.#live
    let next: Running | undefined
    let app: FastifyInstance | undefined
    try {
      const args = this.#reread!()
      next = await this.#prepare(args)
      app = await this.#build(next, args)
    } catch (err) {
      // What #prepare started, when #build failed (see there).
      /* c8 ignore next */
      if (next !== undefined) await this.#end(next, before)
      await this.#slot.discard(app)
      // The file's problem, without the usage text that follows it at a start.
      const reason = messageOf(err).split('\n\n')[0]!
      this.#loaded.failed = { at: new Date().toISOString(), reason }
      log.error({ reason }, 'gateway: the configuration was not reloaded; the one before serves on')
      return
    }
    this.#use(next)
    this.#loaded = { at: new Date().toISOString(), failed: undefined }
    const names = (m: Map<string, unknown>, of: Map<string, unknown>) => [...m.keys()].filter((n) => !of.has(n))
    const changed = [...next.upstreams].filter(([n, u]) => before.upstreams.has(n) && before.upstreams.get(n) !== u).map(([n]) => n)
    log.info({ added: names(next.upstreams, before.upstreams), removed: names(before.upstreams, next.upstreams), changed }, 'gateway: configuration reloaded')
    for (const [name, v] of before.virtuals) if (next.virtuals.get(name) !== v) v.vs.close()
    // Calls of what is gone finish for up to the shutdown grace; then they are cancelled.
    const drained = this.#slot.swap(app)
    let timer: NodeJS.Timeout | undefined
    await Promise.race([drained, new Promise((resolve) => (timer = setTimeout(resolve, this.#config.MCP_SHUTDOWN_GRACE_MS).unref()))])
    clearTimeout(timer)
    await this.#end(before, next)
  }

  /**
   * The upstreams and virtual servers `args` names: the running ones kept where their entry is the
   * same, the others started (a changed one beside the one it replaces, which it takes the upstream
   * subscriptions of).
   */
  async #prepare(args: GatewayArgs): Promise<Running> {
    const { served, virtual } = args
    const config = this.#config
    // The forwarded header is read before authentication takes it off the request: it would carry
    // the gateway's own key upstream.
    if (this.#keys !== undefined && served.some((s) => 'url' in s.spec && s.spec.forwardAuthorization === true)) {
      throw new ConfigurationError('gateway: forwardAuthorization (--forward-authorization) would send the API keys clients give this gateway upstream: use one or the other')
    }
    // The token exchanged is one this gateway verified: without OAuth of its own, anything a caller sends would go to the authorization server.
    const exchange = served.find((s) => 'url' in s.spec && s.spec.tokenExchange !== undefined)
    if (exchange !== undefined && oauthFromConfig(config) === undefined) {
      throw new ConfigurationError(`gateway: ${exchange.name} has tokenExchange, which exchanges the OAuth access tokens this gateway verifies: set MCP_OAUTH_AUDIENCE, MCP_OAUTH_ISSUER and MCP_OAUTH_JWKS_URL`)
    }
    const before = this.#live
    const next: Running = { upstreams: new Map(), virtuals: new Map() }
    const prefix = config.MCP_REDIS_PREFIX ?? 'mcp:'
    try {
      for (const s of served) {
        const had = before.upstreams.get(s.name)
        if (had !== undefined && same(had.served, s)) {
          next.upstreams.set(s.name, had)
          continue
        }
        const raw = had?.raw ?? createStore(s.prefix === undefined ? config : { ...config, MCP_REDIS_PREFIX: `${prefix}${s.name}:` })
        if (this.#relay === undefined) {
          this.#relay = await companion(raw, 'roundRelay', 'The gateway')
          this.#relayStore = raw
        }
        const gw = await Gateway.start({
          name: s.name,
          spec: s.spec,
          required: s.required,
          ...s.tuning,
          log: this.#log,
          server: serverOptionsFromConfig(config),
          relay: this.#relay,
          instance: `${had === undefined ? this.#instance : randomUUID()}${s.prefix ?? ''}`
        })
        next.upstreams.set(s.name, { served: s, gw, raw, store: gw.wrapStore(raw, this.#gateways) })
        // One server that cannot start is nothing to serve: say why and exit non-zero. With --config
        // the others serve, and GET / and /ready name the one that failed.
        if (s.prefix === undefined && gw.upstream.state === 'failed') throw new ConfigurationError(`gateway: the upstream server ${s.name} could not start: ${gw.upstream.lastError}`)
        if (had !== undefined) await gw.adopt(had.gw)
      }
      const gateways = [...next.upstreams.values()].map((u) => u.gw)
      for (const v of virtual) {
        const had = before.virtuals.get(v.name)
        const sources = VirtualServer.sourcesOf(v, gateways)
        if (had !== undefined && same(had.spec, v) && sources.length === had.vs.sources.length && sources.every((g, i) => g === had.vs.sources[i])) {
          next.virtuals.set(v.name, had)
          continue
        }
        const vs = new VirtualServer(v, gateways, serverOptionsFromConfig(config), this.#log)
        const raw = had?.raw ?? createStore({ ...config, MCP_REDIS_PREFIX: `${prefix}${v.name}:` })
        next.virtuals.set(v.name, { spec: v, vs, raw, store: gatewayStore(raw, { mcp: vs.mcp, holder: v.name, upstreamOf: (uri) => vs.upstreamOf(uri) }, this.#gateways, this.#log) })
      }
    } catch (err) {
      await this.#end(next, before)
      throw err
    }
    return next
  }

  /** The app serving `next` (not yet taking requests), its root listing the mounts with `--config`. */
  async #build(next: Running, args: GatewayArgs): Promise<FastifyInstance> {
    const config = this.#config
    const mounts: Mount[] = []
    for (const { served: s, gw, store } of next.upstreams.values()) {
      if (s.mounted) mounts.push({ mcp: gw.mcp, store, ...(s.prefix === undefined ? {} : { prefix: s.prefix }) })
    }
    for (const { spec, vs, store } of next.virtuals.values()) mounts.push({ mcp: vs.mcp, store, prefix: spec.prefix })
    const app = await appFor(config, mounts, { observer: this.#telemetry!.observer, apiKeys: this.#keys, serverFactory: this.#slot.factory })
    try {
      if (!this.#callersWatched && args.served.some((s) => 'url' in s.spec && (s.spec.forwardAuthorization === true || s.spec.tokenExchange !== undefined))) {
        watchCallers(this.#slot.server, this.#keys === undefined ? undefined : apiKeyRing(this.#keys))
        this.#callersWatched = true
      }
      if (args.served[0]!.prefix !== undefined) await this.#root(app, next, args)
      await app.ready()
      /* c8 ignore start -- nothing the file's check lets through fails here (a defect would): the app made is dropped, the running one serves on */
    } catch (err) {
      await this.#slot.discard(app)
      throw err
    }
    /* c8 ignore stop */
    return app
  }

  /** `next` is what the mounts serve from now on; the readiness pings ask its upstreams. */
  #use(next: Running): void {
    this.#live = next
    this.#gateways.splice(0, this.#gateways.length, ...[...next.upstreams.values()].map((u) => u.gw))
  }

  /** End what `old` has and `kept` does not: gateways (their children) and stores whose names are gone. */
  async #end(old: Running, kept: Running): Promise<void> {
    const ended: Promise<unknown>[] = []
    for (const [name, u] of old.upstreams) {
      const now = kept.upstreams.get(name)
      if (now === u) continue
      ended.push(u.gw.close())
      if (now?.raw !== u.raw && u.raw !== this.#relayStore) ended.push(u.raw.close())
    }
    for (const [name, v] of old.virtuals) {
      const now = kept.virtuals.get(name)
      if (now === v) continue
      v.vs.close()
      if (now?.raw !== v.raw) ended.push(v.raw.close())
    }
    await Promise.all(ended)
  }

  /**
   * With several mounts, the root lists them and their state: their catalogues' names, so with
   * OAuth or API keys on it needs a token or key like the mounts do. One audience serves them all,
   * so the first mount's challenge (its RFC 9728 metadata URL) is right here too.
   * Experimental: each mount's Server Card, listed beside it (the AI Catalog lists them too).
   */
  async #root(app: FastifyInstance, next: Running, args: GatewayArgs): Promise<void> {
    const config = this.#config
    const { served } = args
    const upstreams = [...next.upstreams.values()]
    const virtuals = [...next.virtuals.values()]
    const cards = serverCardFromConfig(config) !== false
    const { authenticate } = authSetup({ oauth: oauthFromConfig(config), apiKeys: this.#keys }, served[0]!.prefix!)
    // What the mounts do, in their order: the Host and Origin check (DNS rebinding), CORS (a
    // preflight is answered there), then the token. In a context of its own, so that its hooks stay here.
    const policy = hostOriginPolicy({ loopbackByDefault: true, ...hostOriginFromConfig(config) }, app.server)
    await app.register(async (root) => {
      if (policy.check !== undefined) root.addHook('onRequest', policy.check)
      await root.register(mcpCors, { ...corsFromConfig(config), policy })
      const onRequest = authenticate === undefined ? [] : [async (request: FastifyRequest, reply: FastifyReply) => void (await authenticate(request, reply))]
      root.get('/', { schema: { hide: true }, onRequest }, async () => ({
        servers: upstreams.map(({ served: s, gw }) => ({
          name: s.name,
          // An upstream served only through virtual servers has no path of its own.
          ...(s.mounted ? { path: s.prefix } : {}),
          state: gw.upstream.state,
          ...(gw.upstream.state === 'up' ? {} : { reason: gw.upstream.lastError }),
          required: s.required,
          serverInfo: gw.mcp.serverInfo,
          ...(cards && s.mounted ? { serverCard: `${s.prefix}/mcp/server-card` } : {})
        })),
        ...(virtuals.length === 0
          ? {}
          : {
              virtualServers: virtuals.map(({ spec, vs }) => {
                const down = vs.sources.filter((g) => g.upstream.state !== 'up')
                return {
                  name: spec.name,
                  path: spec.prefix,
                  ...(cards ? { serverCard: `${spec.prefix}/mcp/server-card` } : {}),
                  servers: vs.sources.map((g) => g.name),
                  state: down.length === 0 ? 'up' : 'degraded',
                  ...(down.length === 0 ? {} : { reason: down.map((g) => `${g.name} is ${g.upstream.state}: ${g.upstream.lastError}`).join('; ') })
                }
              })
            }),
        // When this configuration was read, and why the last attempt to read it again failed.
        configuration: { loadedAt: this.#loaded.at, ...(this.#loaded.failed === undefined ? {} : { reloadFailed: this.#loaded.failed }) }
      }))
    })
  }

  /** Stop: the listening server and its apps (see {@link AppSlot.close}), then every upstream and store. */
  async close(): Promise<void> {
    this.#unwatch?.()
    await this.#reloads
    await this.#slot.close()
    await this.#end(this.#live, { upstreams: new Map(), virtuals: new Map() })
    await this.#relay!.close?.()
    await this.#relayStore?.close()
    await this.#telemetry!.stop()
  }
}
