import type { UpstreamSpec } from '../../src/gateway/upstream.js'

/**
 * An upstream written on the SDK's low-level `Server`, doing what server-everything never does: a
 * tool name this binding refuses, a prompts answer without its list, a URI template beyond `{var}`,
 * a resource list that pages without end, subscriptions it reports back (`subs`), and a tool that
 * makes it exit (`exit`), so that the gateway restarts it; `ask` elicits a name at once, `wait` runs
 * until it is cancelled. `name` is its serverInfo name (hostile ones test what shows it).
 */
const script = (name: string) => `
  import { Server } from '@modelcontextprotocol/sdk/server/index.js'
  import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
  import * as T from '@modelcontextprotocol/sdk/types.js'
  const s = new Server({ name: ${JSON.stringify(name)}, version: '1' }, { capabilities: { tools: {}, prompts: {}, resources: { subscribe: true } } })
  const subs = new Set()
  const tool = (name) => ({ name, inputSchema: { type: 'object' } })
  const names = ['has space', 'fine', 'subs', 'exit', 'ask', 'wait']
  s.setRequestHandler(T.ListToolsRequestSchema, async () => ({ tools: names.map(tool) }))
  s.setRequestHandler(T.CallToolRequestSchema, async (r, extra) => {
    if (r.params.name === 'exit') setImmediate(() => process.exit(0))
    if (r.params.name === 'ask') {
      const got = await s.elicitInput({ message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } })
      return { content: [{ type: 'text', text: 'Hello ' + got.content?.name }] }
    }
    if (r.params.name === 'wait') await new Promise((resolve) => extra.signal.addEventListener('abort', resolve))
    return { content: [{ type: 'text', text: r.params.name === 'subs' ? [...subs].join(',') : 'ok' }] }
  })
  s.setRequestHandler(T.ListPromptsRequestSchema, async () => ({}))
  s.setRequestHandler(T.ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: 'odd://t/{id}', name: 't' }, { uriTemplate: 'odd://q{?q}', name: 'q' }]
  }))
  s.setRequestHandler(T.ListResourcesRequestSchema, async (r) => {
    const page = Number(r.params?.cursor ?? 0)
    const resources = Array.from({ length: 5000 }, (_, i) => ({ uri: 'odd://r/' + page + '-' + i, name: 'r' + page + '-' + i }))
    return { resources, nextCursor: String(page + 1) }
  })
  s.setRequestHandler(T.ReadResourceRequestSchema, async (r) => ({ contents: [{ uri: r.params.uri, text: 'odd' }] }))
  s.setRequestHandler(T.SubscribeRequestSchema, async (r) => (subs.add(r.params.uri), {}))
  s.setRequestHandler(T.UnsubscribeRequestSchema, async (r) => (subs.delete(r.params.uri), {}))
  await s.connect(new StdioServerTransport())`

export const oddUpstreamNamed = (name: string) => ({ command: process.execPath, args: ['--input-type=module', '-e', script(name)] }) satisfies UpstreamSpec

export const oddUpstream: UpstreamSpec = oddUpstreamNamed('odd')
