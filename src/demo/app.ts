import { Type } from '@sinclair/typebox'
import type { McpServer } from '../core/mcp-server.js'

/** The view's URI (SEP-1865 reserves `ui://` for MCP App views). */
export const ECHO_VIEW = 'ui://demo/echo'

/**
 * The view: plain HTML and one inline script, no SDK. It speaks the SEP-1865 bridge by hand:
 * `ui/initialize`, then `ui/notifications/initialized`; it shows the tool's input and result as
 * they arrive, and its button asks the host to call `echo` (a `tools/call` from the view). Text only
 * (`textContent`): a result is data, never markup.
 */
const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Echo</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 12px; color: #1b1f24; }
  output { display: block; margin: 8px 0; padding: 8px; border: 1px solid #c8ccd1; border-radius: 6px; white-space: pre-wrap; }
</style>
</head>
<body>
<p>Input: <code id="input">(none yet)</code></p>
<output id="result">Waiting for the result...</output>
<button id="again" type="button" disabled>Echo it again, upper-case</button>
<script>
  let nextId = 1
  let lastText
  const pending = new Map()
  const $ = (id) => document.getElementById(id)
  function request(method, params) {
    const id = nextId++
    parent.postMessage({ jsonrpc: '2.0', id, method, params }, '*')
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }))
  }
  function show(result) {
    const text = (result && Array.isArray(result.content) ? result.content : []).filter((c) => c.type === 'text').map((c) => c.text).join('\\n')
    $('result').textContent = text
    $('again').disabled = typeof lastText !== 'string'
  }
  addEventListener('message', (event) => {
    const m = event.data
    if (event.source !== parent || !m || m.jsonrpc !== '2.0') return
    if (m.id !== undefined && pending.has(m.id)) {
      const p = pending.get(m.id)
      pending.delete(m.id)
      if (m.error) p.reject(m.error)
      else p.resolve(m.result)
    } else if (m.method === 'ui/notifications/tool-input') {
      lastText = m.params && m.params.arguments ? m.params.arguments.text : undefined
      $('input').textContent = String(lastText)
    } else if (m.method === 'ui/notifications/tool-result') show(m.params)
  })
  $('again').addEventListener('click', () => {
    request('tools/call', { name: 'echo', arguments: { text: String(lastText).toUpperCase() } })
      .then(show, (error) => ($('result').textContent = 'Refused: ' + (error && error.message)))
  })
  request('ui/initialize', { appCapabilities: {}, appInfo: { name: 'echo-view', version: '1.0.0' }, protocolVersion: '2026-01-26' })
    .then(() => parent.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/initialized', params: {} }, '*'))
</script>
</body>
</html>
`

/**
 * An MCP App (SEP-1865): `echo_app` echoes like `echo`, and names a view that a host supporting MCP
 * Apps (the console, /console) shows in a sandboxed frame. Other clients get the text as ever.
 */
export function registerAppDemo(mcp: McpServer): void {
  mcp.uiResource(
    { uri: ECHO_VIEW, name: 'echo-view', title: 'Echo view', description: 'The MCP App view of echo_app.', ui: { prefersBorder: true } },
    HTML
  )
  mcp.tool(
    {
      name: 'echo_app',
      title: 'Echo (MCP App)',
      description: 'Returns the text it is given; hosts that support MCP Apps show it in a view.',
      input: Type.Object({ text: Type.String({ description: 'The text to echo.', maxLength: 100_000 }) }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      ui: { resourceUri: ECHO_VIEW }
    },
    ({ text }) => text
  )
}
