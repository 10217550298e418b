import { Type } from '@sinclair/typebox'
import type { McpServer } from '../core/mcp-server.js'
import { errors } from '../errors.js'

/** The demo's long-running tools, run as tasks for clients that declare the Tasks extension. */
export function registerTaskDemos(mcp: McpServer, options: { stepMs?: number } = {}): void {
  const stepMs = options.stepMs ?? 500
  // A cancellable pause that leaves nothing on the signal once it is over: a listener per step
  // would pile up on a long task's signal (100 steps, 100 listeners) until the task ends.
  const sleep = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const onAbort = () => ((clearTimeout(timer), reject(signal.reason)))
      const timer = setTimeout(() => ((signal.removeEventListener('abort', onAbort), resolve())), ms)
      signal.addEventListener('abort', onAbort, { once: true })
    })

  mcp.tool(
    {
      name: 'slow_compute',
      title: 'Slow computation',
      description: 'Sums 1..n slowly (one step per number), reporting progress; cancellable. Runs as a task when the client supports tasks.',
      input: Type.Object({ n: Type.Integer({ minimum: 1, maximum: 100, default: 6 }) }),
      output: Type.Object({ sum: Type.Integer() }),
      task: 'optional',
      pollIntervalMs: 500
    },
    async ({ n }, ctx) => {
      let sum = 0
      for (let i = 1; i <= n; i++) {
        await sleep(stepMs, ctx.signal)
        sum += i
        await ctx.progress(i, n, `added ${i} of ${n}`)
      }
      return { structuredContent: { sum } }
    }
  )

  mcp.tool(
    {
      name: 'failing_job',
      title: 'Failing job',
      description: 'A task that always fails with a JSON-RPC error (status failed).',
      task: 'required',
      pollIntervalMs: 500
    },
    async (_args, ctx) => {
      await sleep(stepMs, ctx.signal)
      throw errors.invalidParams('The job could not find its input data')
    }
  )

  mcp.tool(
    {
      name: 'needs_input_task',
      title: 'Approval task',
      description: 'A task that stops half way to ask for approval (status input_required), then finishes.',
      task: 'required',
      pollIntervalMs: 500
    },
    async (_args, ctx) => {
      await sleep(stepMs, ctx.signal)
      const approval = await ctx.elicit('Deploy to production?', Type.Object({ approve: Type.Boolean() }))
      if (approval.action !== 'accept' || !approval.content.approve) return 'Not deployed.'
      await sleep(stepMs, ctx.signal)
      return 'Deployed.'
    }
  )
}
