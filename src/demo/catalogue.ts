import { Type } from '@sinclair/typebox'
import { McpServer, type McpServerOptions } from '../core/mcp-server.js'
import { registerAskingDemos } from './asking.js'
import { registerTaskDemos } from './tasks.js'
import { registerResumeDemos } from './resume.js'
import { registerAppDemo } from './app.js'

/**
 * The demo server's whole catalogue, in one place. Later features add their demo tools here.
 */
export function createDemoServer(
  options: Omit<McpServerOptions, 'name' | 'version'> & { taskStepMs?: number } = {}
): McpServer {
  const { taskStepMs, ...serverOptions } = options
  const mcp = new McpServer({
    name: 'mcp-pure-http-demo',
    version: '0.1.0',
    title: 'MCP Pure HTTP demo',
    instructions: 'A demo server: echo text, add numbers, look up (made-up) weather, read demo resources.',
    ...serverOptions
  })

  mcp.tool(
    {
      name: 'echo',
      title: 'Echo',
      description: 'Returns the text it is given.',
      input: Type.Object({ text: Type.String({ description: 'The text to echo.', maxLength: 100_000 }) }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false }
    },
    ({ text }) => text
  )

  mcp.tool(
    {
      name: 'add',
      title: 'Add',
      description: 'Adds two numbers and returns the sum as structured output.',
      input: Type.Object({ a: Type.Number(), b: Type.Number() }),
      output: Type.Object({ sum: Type.Number() }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false }
    },
    ({ a, b }) => {
      const sum = a + b
      // 1e308 + 1e308 is Infinity, which JSON (and so the output schema) cannot carry: a tool error.
      if (!Number.isFinite(sum)) throw new Error(`The sum of ${a} and ${b} is out of range`)
      return { structuredContent: { sum } }
    }
  )

  mcp.resource(
    { uri: 'demo://readme', name: 'readme', title: 'Read me', description: 'What this demo offers.', mimeType: 'text/markdown' },
    () =>
      '# MCP Pure HTTP demo\n\nTools: echo, add, get_weather (asks for a missing location), update_work_item (asks in two rounds),\n' +
      'slow_compute, failing_job and needs_input_task (tasks), long_sum (resumable), echo_app (an MCP App).\n' +
      'Resources: demo://readme, demo://roots (asks for your roots), demo://numbers (read in parts), demo://items/{id},\n' +
      'ui://demo/echo (the view of echo_app).\n' +
      'Prompts: greeting, code_review (asks for a tone).\n'
  )

  const items = new Map(['apple', 'banana', 'cherry'].map((name, i) => [String(i + 1), name]))
  mcp.resourceTemplate(
    {
      uriTemplate: 'demo://items/{id}',
      name: 'item',
      title: 'Item',
      description: 'A demo item by id (1, 2 or 3).',
      mimeType: 'application/json',
      complete: { id: (value) => [...items.keys()].filter((id) => id.startsWith(value)) }
    },
    (_uri, { id }) => {
      const name = items.get(id!)
      return name === undefined ? undefined : JSON.stringify({ id: Number(id), name })
    }
  )

  const names = ['Ada', 'Alan', 'Barbara', 'Grace', 'Linus', 'Margaret']
  mcp.prompt(
    {
      name: 'greeting',
      title: 'Greeting',
      description: 'A friendly greeting for someone.',
      arguments: {
        name: {
          description: 'Who to greet.',
          required: true,
          complete: (value) => names.filter((n) => n.toLowerCase().startsWith(value.toLowerCase()))
        }
      }
    },
    ({ name }) => `Please write a short, warm greeting for ${name}.`
  )

  registerAskingDemos(mcp)
  registerTaskDemos(mcp, { stepMs: taskStepMs })
  registerResumeDemos(mcp)
  registerAppDemo(mcp)
  return mcp
}
