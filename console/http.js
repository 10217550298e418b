// The Pure HTTP binding from the page: fetch on the page's own origin, under the prefix the page
// is served at (a gateway's mount serves it at /{name}/console: its API is /{name}/...).

/** The API's base: the folder above this file's /console/. */
const BASE = new URL('..', import.meta.url)
/** The protocol version the console speaks: the per-request envelope and input_required rounds. */
export const VERSION = '2026-07-28'
const TOKEN = 'mcp-console-token'
const TASKS = 'io.modelcontextprotocol/tasks'
const UI = 'io.modelcontextprotocol/ui'

// The token stays in this tab's sessionStorage: it survives a reload, and is gone with the tab.
export const token = {
  get: () => sessionStorage.getItem(TOKEN) ?? '',
  set: (value) => (value === '' ? sessionStorage.removeItem(TOKEN) : sessionStorage.setItem(TOKEN, value))
}

/**
 * The `_meta` that declares what the console can answer: forms, sampling and roots by hand, MCP
 * App views (SEP-1865), and the Tasks extension only when a call is to run as a task (a tool
 * whose task support is "optional" becomes a task for any client that declares it).
 */
export function capabilities(tasks = false) {
  const declared = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {}, extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } }
  if (tasks) declared.extensions[TASKS] = {}
  return { 'io.modelcontextprotocol/clientCapabilities': declared }
}

/** A JSON header value: the text itself when ASCII, else the binding's `=?base64?…?=` form. */
export function headerJson(value) {
  const text = JSON.stringify(value)
  if (/^[\x20-\x7e]*$/.test(text)) return text
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return `=?base64?${btoa(binary)}?=`
}

/** Listeners told of every 401, so the page can ask for a token. */
export const refusals = new Set()

/**
 * One request. Answers `{ ok, status, headers, body }`, the body parsed when it is JSON; a network
 * failure is an answer too (status 0), so that every caller shows it the same way.
 */
export async function send(method, path, { body, headers = {}, stream = false } = {}) {
  const sent = { 'mcp-protocol-version': VERSION, ...headers }
  const bearer = token.get()
  if (bearer !== '') sent.authorization = `Bearer ${bearer}`
  if (body !== undefined) sent['content-type'] = 'application/json'
  if (stream) sent.accept = 'text/event-stream, application/json'
  let response
  try {
    response = await fetch(new URL(path, BASE), { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body) })
  } catch (err) {
    return { ok: false, status: 0, headers: new Headers(), body: { code: 0, message: `The request failed: ${err.message}` } }
  }
  if (response.status === 401) for (const listener of refusals) listener()
  if (stream && response.ok && (response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return { ok: true, status: response.status, headers: response.headers, events: events(response.body) }
  }
  const text = await response.text()
  let parsed
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = text
  }
  return { ok: response.ok, status: response.status, headers: response.headers, body: parsed }
}

/** A GET that declares the console's capabilities in `Mcp-Meta`. */
export function get(path, { tasks = false, headers = {} } = {}) {
  return send('GET', path, { headers: { 'mcp-meta': headerJson(capabilities(tasks)), ...headers } })
}

/**
 * A tool call answered as Server-Sent Events: `onNotification` gets each notification as it comes
 * (progress, log messages), and the answer is the `result` event (`ok`) or the `error` event. A
 * server that answers JSON instead (an error before the stream starts) is answered as is.
 */
export async function streamedCall(path, body, onNotification) {
  const answer = await send('POST', path, { body, stream: true })
  if (answer.events === undefined) return answer
  try {
    for await (const { event, data } of answer.events) {
      if (event === 'notification') onNotification(data)
      else if (event === 'result') return { ok: true, status: answer.status, headers: answer.headers, body: data }
      else if (event === 'error') return { ok: false, status: answer.status, headers: answer.headers, body: data }
    }
  } catch (err) {
    return { ok: false, status: answer.status, headers: answer.headers, body: { code: 0, message: `The stream broke: ${err.message}` } }
  }
  return { ok: false, status: answer.status, headers: answer.headers, body: { code: 0, message: 'The stream ended without a result' } }
}

/** The events of a text/event-stream body, each `{ event, data }` with its data parsed as JSON. */
async function * events(stream) {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer = (buffer + value).replace(/\r\n?/g, '\n')
    let end
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let event = 'message'
      const data = []
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':')
        if (colon === 0) continue
        const field = colon < 0 ? line : line.slice(0, colon)
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'event') event = text
        else if (field === 'data') data.push(text)
      }
      if (data.length > 0) yield { event, data: JSON.parse(data.join('\n')) }
    }
  }
}
