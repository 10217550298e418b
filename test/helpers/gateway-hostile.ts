import type { UpstreamSpec } from '../../src/gateway/upstream.js'

/**
 * The source of a stdio MCP server written by hand, for `node -e`: JSON lines in and out;
 * `initialize`, `ping` and `tools/list` (the tools named, each taking any object) answered; every
 * other message given to `handle`, statements with the message `m`, `write(message)` and
 * `text(string)` (a tool result) in scope, after `prelude`.
 */
export function handWritten(name: string, tools: readonly string[], handle: string, prelude = ''): string {
  return `
  ${prelude}
  const write = (m) => process.stdout.write(JSON.stringify(m) + '\\n')
  const text = (s) => ({ content: [{ type: 'text', text: s }] })
  const tools = ${JSON.stringify(tools)}.map((name) => ({ name, inputSchema: { type: 'object' } }))
  let buffer = ''
  process.stdin.on('data', (chunk) => {
    buffer += chunk
    let nl
    while ((nl = buffer.indexOf('\\n')) >= 0) {
      const m = JSON.parse(buffer.slice(0, nl))
      buffer = buffer.slice(nl + 1)
      if (m.method === 'initialize') write({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: ${JSON.stringify(name)}, version: '1' } } })
      else if (m.method === 'ping') write({ jsonrpc: '2.0', id: m.id, result: {} })
      else if (m.method === 'tools/list') write({ jsonrpc: '2.0', id: m.id, result: { tools } })
      else {
${handle}
      }
    }
  })`
}

/**
 * A stdio upstream that writes its JSON lines by hand, to do what no SDK server does: `cut` answers
 * with half a line, `wrong-id` answers a request nobody made, `silent` never answers, `chatty`
 * reports progress every 250 ms for 3 s before it answers, `cancelled` lists the requests it was
 * told were cancelled, `ok` answers at once.
 */
const script = handWritten(
  'hostile',
  ['cut', 'wrong-id', 'silent', 'chatty', 'cancelled', 'ok'],
  `
      if (m.method === 'notifications/cancelled') cancelled.push(m.params.requestId)
      else if (m.method === 'tools/call') {
        const name = m.params.name
        if (name === 'cut') process.stdout.write('{"jsonrpc":"2.0","id":' + m.id + ',"result":{"content":[{"type":"te\\n')
        else if (name === 'wrong-id') write({ jsonrpc: '2.0', id: 'nobody-asked', result: text('lost') })
        else if (name === 'chatty') {
          let n = 0
          const token = m.params._meta?.progressToken
          const timer = setInterval(() => {
            if (++n <= 12) return write({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: n, total: 12 } })
            clearInterval(timer)
            write({ jsonrpc: '2.0', id: m.id, result: text('done after ' + (n - 1) + ' reports') })
          }, 250)
        } else if (name === 'cancelled') write({ jsonrpc: '2.0', id: m.id, result: text(JSON.stringify(cancelled)) })
        else if (name === 'ok') write({ jsonrpc: '2.0', id: m.id, result: text('ok') })
      }`,
  'const cancelled = []'
)

export const hostileUpstream: UpstreamSpec = { command: process.execPath, args: ['-e', script] }

/**
 * The same server, but one that outlives the end of its stdin (as servers with timers of their own
 * do, server-everything's among them): only a signal ends it.
 */
export const stubbornUpstream: UpstreamSpec = { command: process.execPath, args: ['-e', `${script}\n  setInterval(() => undefined, 1000)`] }
