import { Type } from '@sinclair/typebox'
import { McpServer } from '../../src/core/mcp-server.js'
import { ErrorCode, McpError } from '../../src/errors.js'
import type { Registration, ToolReturn } from '../../src/core/definitions.js'
import { elicit, listRoots, sample } from '../../src/mrtr/questions.js'
import { full, resolver } from '../../src/mrtr/resolvers.js'
import { inputRequired } from '../../src/mrtr/rounds.js'
import type { InputRequest } from '../../src/schema/mrtr.js'

/** A 1x1 red PNG and a 10 ms silent WAV: the smallest real media the content scenarios accept. */
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=='
export const WAV = wav()

/**
 * The catalogue `@modelcontextprotocol/conformance` expects of a server under test (its scenarios'
 * "Server Implementation Requirements", 0.2.0-alpha.12), written with this library's own API. The
 * names and texts are the suite's; `expected-failures.json` says which scenarios still fail and why.
 */
export function createConformanceServer(): McpServer {
  const mcp = new McpServer({ name: 'mcp-pure-http-conformance', version: '0.1.0' })
  const noArgs = (name: string, description: string, run: () => ToolReturn<Record<string, unknown>>) =>
    mcp.tool({ name, description }, run)

  // Listed first: the header scenarios call the first listed tool with no arguments.
  noArgs('test_simple_text', 'Returns simple text content.', () => 'This is a simple text response for testing.')
  noArgs('test_image_content', 'Returns image content.', () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }))
  noArgs('test_audio_content', 'Returns audio content.', () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }))
  noArgs('test_embedded_resource', 'Returns an embedded resource.', () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }]
  }))
  noArgs('test_multiple_content_types', 'Returns text, image and resource content.', () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } }
    ]
  }))
  noArgs('test_error_handling', 'Always fails.', () => {
    throw new Error('This tool intentionally returns an error for testing')
  })
  // Request-scoped notifications: through the context, onto the request's SSE response.
  const pause = () => new Promise((resolve) => setTimeout(resolve, 50))
  mcp.tool({ name: 'test_tool_with_logging', description: 'Logs three messages while it runs.' }, async (_a, ctx) => {
    await ctx.sendLog('info', 'Tool execution started')
    await pause()
    await ctx.sendLog('info', 'Tool processing data')
    await pause()
    await ctx.sendLog('info', 'Tool execution completed')
    return 'Logging tool completed'
  })
  mcp.tool({ name: 'test_tool_with_progress', description: 'Reports progress 0, 50, 100 of 100.' }, async (_a, ctx) => {
    for (const done of [0, 50, 100]) {
      await ctx.progress(done, 100)
      if (done < 100) await pause()
    }
    return 'Progress tool completed'
  })
  mcp.tool({ name: 'test_logging_tool', description: 'Logs, which reaches the client only at the level it asked for.' }, async (_a, ctx) => {
    await ctx.sendLog('info', 'A log message')
    return 'Logged'
  })

  // Legacy-era server-to-client requests: asked through MRTR resolvers (2026-07-28), legacy needs the SSE seam.
  const prompt = resolver({
    name: 'llm',
    args: ['prompt'],
    resolve: (args: { prompt: string }) => sample({ messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }], maxTokens: 100 })
  })
  mcp.tool({ name: 'test_sampling', description: 'Asks the client LLM.', input: Type.Object({ prompt: Type.String() }), resolvers: { llm: prompt } }, (_a, ctx) =>
    `LLM response: ${JSON.stringify(ctx.resolved.llm.content)}`
  )
  const person = Type.Object({
    username: Type.String({ description: "User's response" }),
    email: Type.String({ description: "User's email address" })
  })
  const ask = resolver({ name: 'user', args: ['message'], resolve: (args: { message: string }) => elicit(args.message, person) })
  mcp.tool(
    { name: 'test_elicitation', description: 'Asks the user.', input: Type.Object({ message: Type.String() }), resolvers: { answer: full(ask) } },
    (_a, ctx) => `User response: ${JSON.stringify(ctx.resolved.answer)}`
  )
  const defaults = resolver({
    name: 'defaults',
    resolve: () =>
      elicit('Please review your profile', Type.Object({
        name: Type.String({ default: 'John Doe' }),
        age: Type.Integer({ default: 30 }),
        score: Type.Number({ default: 95.5 }),
        status: Type.Unsafe<string>({ type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' }),
        verified: Type.Boolean({ default: true })
      }))
  })
  mcp.tool({ name: 'test_elicitation_sep1034_defaults', description: 'Elicitation with defaults.', resolvers: { r: full(defaults) } }, (_a, ctx) =>
    `Elicitation completed: action=${ctx.resolved.r.action}, content=${JSON.stringify('content' in ctx.resolved.r ? ctx.resolved.r.content : {})}`
  )
  const enums = resolver({
    name: 'enums',
    resolve: () =>
      elicit('Pick options', Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          titledSingle: { type: 'string', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }] },
          legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: { type: 'array', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] } }
        }
      }))
  })
  mcp.tool({ name: 'test_elicitation_sep1330_enums', description: 'Elicitation with every enum form.', resolvers: { r: full(enums) } }, (_a, ctx) =>
    `Elicitation completed: action=${ctx.resolved.r.action}, content=${JSON.stringify('content' in ctx.resolved.r ? ctx.resolved.r.content : {})}`
  )

  // server-stateless diagnostics.
  const sampled = resolver({ name: 'sampled', resolve: () => sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 10 }) })
  mcp.tool({ name: 'test_missing_capability', description: 'Needs the sampling capability.', resolvers: { s: sampled } }, () => 'sampled')
  const streamed = resolver({ name: 'answer', resolve: () => elicit('Anything to add?', Type.Object({ note: Type.String() })) })
  mcp.tool({ name: 'test_streaming_elicitation', description: 'Asks through input_required, never a request on a stream.', resolvers: { a: streamed } }, () => 'thanks')
  let dynamicTool: Registration | undefined
  noArgs('test_trigger_tool_change', 'Adds or removes test_dynamic_tool.', () => {
    if (dynamicTool === undefined) dynamicTool = noArgs('test_dynamic_tool', 'Comes and goes.', () => 'dynamic')
    else {
      dynamicTool.remove()
      dynamicTool = undefined
    }
    return 'The tool list changed'
  })
  let dynamicPrompt: Registration | undefined
  noArgs('test_trigger_prompt_change', 'Adds or removes test_dynamic_prompt.', () => {
    if (dynamicPrompt === undefined) dynamicPrompt = mcp.prompt({ name: 'test_dynamic_prompt', description: 'Comes and goes.' }, () => 'dynamic')
    else {
      dynamicPrompt.remove()
      dynamicPrompt = undefined
    }
    return 'The prompt list changed'
  })

  // The Tasks extension's sync tool, then its task-supporting ones.
  mcp.tool({ name: 'greet', description: 'Greets synchronously.', input: Type.Object({ name: Type.String() }) }, ({ name }) => `Hello, ${name}!`)
  registerTasks(mcp)

  // SEP-2243 custom headers: `region` travels in Mcp-Param-Region too.
  mcp.tool(
    { name: 'test_custom_header', description: 'Echoes a region mirrored into Mcp-Param-Region.', input: Type.Object({ region: Type.String({ 'x-mcp-header': 'Region' }) }) },
    ({ region }) => `Region: ${region}`
  )
  // JSON Schema 2020-12 keywords kept as written (SEP-1613, SEP-2106).
  mcp.tool({ name: 'json_schema_2020_12_tool', description: 'Tool with JSON Schema 2020-12 features', input: Type.Unsafe(JSON_SCHEMA_2020_12) }, () => 'ok')
  registerMrtr(mcp)
  registerResourcesAndPrompts(mcp)
  return mcp
}

const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' }
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false
}

/** Resolves after `ms`, or rejects when `signal` aborts (tasks/cancel). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => ((clearTimeout(timer), reject(signal.reason))), { once: true })
  })
}

/** The Tasks extension (SEP-2663) fixtures: tasks for clients that declare the extension. */
function registerTasks(mcp: McpServer): void {
  mcp.tool(
    {
      name: 'slow_compute',
      description: 'Sleeps `seconds`, then answers; cancellable.',
      input: Type.Object({ seconds: Type.Number({ minimum: 0, maximum: 600 }), label: Type.Optional(Type.String()) }),
      task: 'optional',
      pollIntervalMs: 200
    },
    async ({ seconds, label }, ctx) => {
      await sleep(seconds * 1000, ctx.signal)
      return `Computed ${label ?? 'result'} after ${seconds}s`
    }
  )
  mcp.tool({ name: 'failing_job', description: 'Fails as a tool (isError) after a second.', task: 'required', pollIntervalMs: 200 }, async (_a, ctx) => {
    await sleep(1000, ctx.signal)
    throw new Error('The job failed')
  })
  mcp.tool({ name: 'protocol_error_job', description: 'Fails with a protocol error (status failed).', task: 'required', pollIntervalMs: 200 }, async () => {
    throw new McpError(ErrorCode.internalError, 'The job hit a protocol error', 500)
  })
  mcp.tool(
    { name: 'confirm_delete', description: 'Asks to confirm, then deletes.', input: Type.Object({ filename: Type.String() }), task: 'required', pollIntervalMs: 200 },
    async ({ filename }, ctx) => {
      const answer = await ctx.elicit(`Delete ${filename}?`, Type.Object({ confirm: Type.Boolean() }))
      return answer.action === 'accept' && answer.content.confirm ? `Deleted ${filename}` : `Kept ${filename}`
    }
  )
  // Two questions at once: a hand-rolled input_required inside a task parks it with both keys.
  mcp.tool({ name: 'multi_input', description: 'Asks two things at once.', task: 'required', pollIntervalMs: 200 }, (_a, ctx) => {
    const got = ctx.inputResponses as Record<string, { content?: { name?: string } }> | undefined
    if (got === undefined) {
      return inputRequired({
        inputRequests: {
          name: elicit('Your name?', Type.Object({ name: Type.String() })),
          confirm: elicit('Go ahead?', Type.Object({ confirm: Type.Boolean() }))
        }
      })
    }
    return `Thanks, ${got.name?.content?.name ?? 'stranger'}`
  })
  // MRTR first (the name), then the work as a task (SEP-2663's composition).
  const user = resolver({ name: 'user_name', resolve: () => elicit('What is your name?', Type.Object({ name: Type.String() })) })
  mcp.tool({ name: 'test_tool_with_task', description: 'Asks a name, then works as a task.', task: 'required', pollIntervalMs: 200, resolvers: { user } }, (_a, ctx) =>
    `Hello, ${ctx.resolved.user.name}, from a task`
  )
}

/** The SEP-2322 (input_required) fixtures. */
function registerMrtr(mcp: McpServer): void {
  const name = (message: string, key: string) =>
    resolver({ name: key, resolve: () => elicit(message, Type.Object({ name: Type.String() })) })
  mcp.tool({ name: 'test_input_required_result_elicitation', description: 'Asks for a name.', resolvers: { user: name('What is your name?', 'user_name') } }, (_a, ctx) =>
    `Hello, ${ctx.resolved.user.name}!`
  )
  const capital = resolver({
    name: 'capital_question',
    resolve: () => sample({ messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100 })
  })
  mcp.tool({ name: 'test_input_required_result_sampling', description: 'Asks the client LLM.', resolvers: { answer: capital } }, (_a, ctx) =>
    `The model said: ${JSON.stringify(ctx.resolved.answer.content)}`
  )
  const roots = resolver({ name: 'client_roots', resolve: () => listRoots() })
  mcp.tool({ name: 'test_input_required_result_list_roots', description: 'Asks for the roots.', resolvers: { roots } }, (_a, ctx) =>
    `Roots: ${ctx.resolved.roots.map((r) => r.uri).join(', ')}`
  )
  const confirm = resolver({ name: 'confirm', resolve: () => elicit('Please confirm', Type.Object({ ok: Type.Boolean() })) })
  mcp.tool({ name: 'test_input_required_result_request_state', description: 'Asks, then checks its sealed state.', resolvers: { confirm } }, (_a, ctx) =>
    `state-ok: confirmed=${ctx.resolved.confirm.ok}`
  )
  const greeting = resolver({ name: 'greeting', resolve: () => sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 }) })
  mcp.tool(
    { name: 'test_input_required_result_multiple_inputs', description: 'Asks three things at once.', resolvers: { user: name('What is your name?', 'user_name'), greeting, roots } },
    (_a, ctx) => `${ctx.resolved.user.name}: ${ctx.resolved.roots.length} root(s)`
  )
  const step1 = resolver({ name: 'step1', resolve: () => elicit('Step 1: What is your name?', Type.Object({ name: Type.String() })) })
  const step2 = resolver({ name: 'step2', needs: { step1 }, resolve: () => elicit('Step 2: What is your favorite color?', Type.Object({ color: Type.String() })) })
  mcp.tool({ name: 'test_input_required_result_multi_round', description: 'Asks twice, one round each.', resolvers: { step1, step2 } }, (_a, ctx) =>
    `${ctx.resolved.step1.name} likes ${ctx.resolved.step2.color}`
  )
  mcp.tool({ name: 'test_input_required_result_tampered_state', description: 'Seals its state.', resolvers: { confirm } }, () => 'not tampered')
  // Asks only what the request's capabilities allow (a hand-rolled handler reading ctx.clientCapabilities).
  mcp.tool({ name: 'test_input_required_result_capabilities', description: 'Asks what the client can answer.' }, (_a, ctx) => {
    if (ctx.inputResponses !== undefined && Object.keys(ctx.inputResponses).length > 0) return 'Thanks'
    const inputRequests: Record<string, InputRequest> = {}
    const caps = ctx.clientCapabilities ?? {}
    if (caps.sampling !== undefined) inputRequests.summary = { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'Summarize' } }], maxTokens: 50 } }
    if (caps.elicitation !== undefined) inputRequests.name = { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } }
    return Object.keys(inputRequests).length === 0 ? 'Nothing to ask' : inputRequired({ inputRequests })
  })
  const context = resolver({ name: 'user_context', resolve: () => elicit('What context should the prompt use?', Type.Object({ context: Type.String() })) })
  mcp.prompt({ name: 'test_input_required_result_prompt', description: 'Asks for context first.', resolvers: { context } }, (_a, ctx) =>
    `Use this context: ${ctx.resolved.context.context}`
  )
}

function registerResourcesAndPrompts(mcp: McpServer): void {
  mcp.resource({ uri: 'test://static-text', name: 'static-text', description: 'Static text.', mimeType: 'text/plain' }, () =>
    'This is the content of the static text resource.'
  )
  mcp.resource({ uri: 'test://static-binary', name: 'static-binary', description: 'Static binary (a PNG).', mimeType: 'image/png' }, () =>
    Buffer.from(PNG, 'base64')
  )
  mcp.resource({ uri: 'test://watched-resource', name: 'watched-resource', description: 'Subscribable.', mimeType: 'text/plain' }, () => 'Watched')
  mcp.resourceTemplate(
    { uriTemplate: 'test://template/{id}/data', name: 'template', description: 'Data by id.', mimeType: 'application/json' },
    (_uri, { id }) => JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
  )
  mcp.prompt({ name: 'test_simple_prompt', description: 'A simple prompt.' }, () => 'This is a simple prompt for testing.')
  mcp.prompt(
    {
      name: 'test_prompt_with_arguments',
      description: 'A prompt with two arguments.',
      arguments: {
        arg1: { description: 'First test argument', required: true, complete: (v) => ['paris', 'park', 'party'].filter((s) => s.startsWith(v)) },
        arg2: { description: 'Second test argument', required: true }
      }
    },
    ({ arg1, arg2 }) => `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`
  )
  mcp.prompt(
    { name: 'test_prompt_with_embedded_resource', description: 'Embeds a resource.', arguments: { resourceUri: { description: 'URI to embed', required: true } } },
    ({ resourceUri }) => [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } }
    ]
  )
  mcp.prompt({ name: 'test_prompt_with_image', description: 'Shows an image.' }, () => [
    { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
    { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } }
  ])
}

function wav(): string {
  const samples = 80
  const b = Buffer.alloc(44 + samples)
  b.write('RIFF', 0)
  b.writeUInt32LE(36 + samples, 4)
  b.write('WAVEfmt ', 8)
  b.writeUInt32LE(16, 16)
  b.writeUInt16LE(1, 20) // PCM
  b.writeUInt16LE(1, 22) // mono
  b.writeUInt32LE(8000, 24)
  b.writeUInt32LE(8000, 28)
  b.writeUInt16LE(1, 32)
  b.writeUInt16LE(8, 34)
  b.write('data', 36)
  b.writeUInt32LE(samples, 40)
  b.fill(128, 44)
  return b.toString('base64')
}
