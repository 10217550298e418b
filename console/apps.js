// MCP App views (SEP-1865): after a call of a tool whose `_meta.ui.resourceUri` names a `ui://`
// resource, the console reads that resource and shows it in a frame that is sandboxed with
// `allow-scripts` alone (an opaque origin: the view cannot touch this page, its storage or the
// token) and served under a policy built from the view's `_meta.ui.csp` (GET /console/view). The
// two talk by postMessage only, JSON-RPC as the SEP says; what the view sends is data, checked here.
import { el } from './dom.js'
import { get, send } from './http.js'

export const UI_MIME = 'text/html;profile=mcp-app'
const FRAME = new URL('view', import.meta.url)
const MAX_HEIGHT = 600
/** The SEP's version of the bridge this host speaks. */
const BRIDGE_VERSION = '2026-01-26'

/** The `ui://` URI of a tool's view, or undefined. */
export function viewOf(tool) {
  const uri = tool?._meta?.ui?.resourceUri
  return typeof uri === 'string' && uri.startsWith('ui://') ? uri : undefined
}

/** Whether a view may call `tool`: its `_meta.ui.visibility` includes "app" (the default: both). */
export function appMayCall(tool) {
  const visibility = tool?._meta?.ui?.visibility
  return !Array.isArray(visibility) || visibility.includes('app')
}

/** The page and `_meta.ui` of a view from its resources/read answer, or why it cannot be shown. */
function pageOf(uri, body) {
  const contents = Array.isArray(body?.contents) ? body.contents : []
  const content = contents.find((c) => c?.uri === uri) ?? contents[0]
  if (content === undefined) return { error: 'the read has no contents' }
  if (content.mimeType !== UI_MIME) return { error: `its mimeType is ${JSON.stringify(content.mimeType)}, not ${UI_MIME}` }
  const ui = typeof content._meta?.ui === 'object' && content._meta.ui !== null ? content._meta.ui : {}
  if (typeof content.text === 'string') return { html: content.text, ui }
  if (typeof content.blob !== 'string') return { error: 'it has neither text nor blob' }
  try {
    return { html: new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0))), ui }
  } catch {
    return { error: 'its blob is not base64' }
  }
}

/**
 * Show the view of `tool` for a call that answered `result` to `args`, as a step of exchange `x`.
 * `lookup(name)` is the listed tool of that name, for the calls the view makes.
 */
export async function showView(x, tool, args, result, lookup) {
  const uri = viewOf(tool)
  const read = await get(`resources/${encodeURIComponent(uri)}`)
  if (!read.ok) return x.step(`View ${uri}: not read`, read.body, 'error')
  const page = pageOf(uri, read.body)
  if (page.error !== undefined) return x.step(`View ${uri}: not shown`, { reason: page.error }, 'error')
  const csp = typeof page.ui.csp === 'object' && page.ui.csp !== null ? page.ui.csp : {}
  const src = `${FRAME.pathname}?csp=${encodeURIComponent(JSON.stringify(csp))}`
  const frame = el('iframe', { class: page.ui.prefersBorder === false ? 'app-view borderless' : 'app-view', sandbox: 'allow-scripts', referrerpolicy: 'no-referrer', title: `View of ${tool.name}: ${uri}`, src })
  x.step(`View ${uri}`, undefined, 'view').append(frame)
  bridge(x, frame, { tool, args, result, html: page.html, csp, lookup })
}

/** A JSON-RPC error for the view. */
class BridgeError extends Error {
  constructor(code, message) {
    super(message)
    this.code = code
  }
}

/** The host's side of the view's JSON-RPC: what the console answers, and when it sends. */
function bridge(x, frame, { tool, args, result, html, csp, lookup }) {
  const post = (message) => frame.contentWindow?.postMessage({ jsonrpc: '2.0', ...message }, '*')
  const refuse = (id, code, message) => post({ id, error: { code, message } })
  let loaded = false
  let initialized = false
  window.addEventListener('message', (event) => {
    if (event.source !== frame.contentWindow) return
    const m = event.data
    if (typeof m !== 'object' || m === null || m.jsonrpc !== '2.0' || typeof m.method !== 'string') return
    const id = typeof m.id === 'string' || typeof m.id === 'number' ? m.id : undefined
    switch (m.method) {
      case 'ui/notifications/sandbox-proxy-ready':
        // The frame's page is ready for the view; once: a view that reloads itself stays blank.
        if (!loaded) post({ method: 'ui/notifications/sandbox-resource-ready', params: { html, csp } })
        loaded = true
        return
      case 'ui/initialize':
        if (id !== undefined) post({ id, result: initializeResult(tool) })
        return
      case 'ui/notifications/initialized':
        // Nothing goes to the view before this (the SEP's rule); the call is over, so both now.
        if (initialized) return
        initialized = true
        post({ method: 'ui/notifications/tool-input', params: { arguments: args } })
        post({ method: 'ui/notifications/tool-result', params: result })
        return
      case 'ui/notifications/size-changed': {
        const height = Number(m.params?.height)
        if (Number.isFinite(height) && height > 0) frame.style.height = `${Math.min(Math.ceil(height), MAX_HEIGHT)}px`
        return
      }
      case 'notifications/message':
        x.step(`View log (${String(m.params?.level)})`, m.params?.data, 'log')
        return
      case 'ping':
        if (id !== undefined) post({ id, result: {} })
        return
      case 'ui/request-display-mode':
        if (id !== undefined) post({ id, result: { mode: 'inline' } })
        return
      case 'tools/call':
        if (id !== undefined) void callFromView(x, m.params, lookup).then((r) => post({ id, result: r }), (e) => refuse(id, Number.isInteger(e?.code) ? e.code : -32603, String(e?.message)))
        return
      default:
        if (id !== undefined) refuse(id, -32601, `The console does not support ${m.method} from a view`)
    }
  })
}

function initializeResult(tool) {
  return {
    protocolVersion: BRIDGE_VERSION,
    hostInfo: { name: 'mcp-pure-http console', version: '1.0.0' },
    hostCapabilities: { serverTools: {}, logging: {}, sandbox: { permissions: {} } },
    hostContext: {
      toolInfo: { tool },
      theme: window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light',
      displayMode: 'inline',
      availableDisplayModes: ['inline'],
      containerDimensions: { maxHeight: MAX_HEIGHT },
      locale: window.navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      platform: 'web'
    }
  }
}

/**
 * Ask the user whether the view may make a call: its tool and arguments shown as text, "Allow" or
 * "Refuse". Resolves true or false; the question stays in the exchange with the answer given.
 */
function approve(x, name, args) {
  const step = x.step(`The view asks to call ${name}`, args, 'round')
  const allow = el('button', { type: 'button' }, 'Allow')
  const refuse = el('button', { type: 'button' }, 'Refuse')
  const row = el('div', { class: 'row' }, allow, refuse)
  step.append(row)
  return new Promise((resolve) => {
    const answer = (allowed) => {
      row.replaceChildren(el('p', {}, allowed ? 'Allowed.' : 'Refused.'))
      resolve(allowed)
    }
    allow.addEventListener('click', () => answer(true), { once: true })
    refuse.addEventListener('click', () => answer(false), { once: true })
  })
}

/**
 * A `tools/call` from the view, sent to the server as the console's own (with the token, shown in
 * the exchange) once the user allows it: only to a listed tool of this server whose visibility
 * includes "app", and answered only when it completes at once (no rounds of questions, no task:
 * the view would have no way to see them).
 */
async function callFromView(x, params, lookup) {
  const name = params?.name
  const tool = typeof name === 'string' ? lookup(name) : undefined
  if (tool === undefined) throw new BridgeError(-32602, `Unknown tool: ${String(name)}`)
  if (!appMayCall(tool)) throw new BridgeError(-32602, `Tool ${name} is not for apps (its visibility leaves "app" out)`)
  const args = params.arguments ?? {}
  if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new BridgeError(-32602, 'arguments must be an object')
  if (!await approve(x, name, args)) throw new BridgeError(-32000, 'The user refused the call')
  const path = `tools/${encodeURIComponent(name)}/calls`
  const body = { arguments: args, _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } }
  x.folded(`Request from the view: POST ${path}`, body, 'request')
  const answer = await send('POST', path, { body })
  if (!answer.ok) {
    x.step(`The view's call: error (HTTP ${answer.status})`, answer.body, 'error')
    throw new BridgeError(Number.isInteger(answer.body?.code) ? answer.body.code : -32603, String(answer.body?.message ?? `HTTP ${answer.status}`))
  }
  x.step(`The view's call: result of ${name}`, answer.body, 'result')
  const kind = answer.body?.resultType
  if (kind !== undefined && kind !== 'complete') throw new BridgeError(-32000, `The console answers a view's call only when it completes at once (this one: ${kind})`)
  return answer.body
}
