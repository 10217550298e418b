import { ConfigurationError, errors, messageOf, wireErrorOf } from '../errors.js'
import { runRound, type RunResult } from '../mrtr/rounds.js'
import { isThenable, type MaybePromise } from './maybe-promise.js'
import { LazyTarget } from '../mrtr/seal.js'
import type { ContentBlock } from '../schema/content.js'
import type { CallToolBody } from '../schema/tools.js'
import type { CallContext } from './call-context.js'
import type { RequestContext } from './request-context.js'
import { RESUME, finishResumable, isResumable, openResume } from '../mrtr/resume.js'
import type { McpServer } from './mcp-server.js'
import type { ToolReturn } from './definitions.js'
import type { ToolEntry } from './registry.js'
import type { TaskRecord } from '../store/types.js'
import { TASKS_CAPABILITY, TASKS_EXTENSION, clientTakesTasks, createTaskResult, startTask } from '../tasks/runner.js'
import { copyOf, finish } from './results.js'
import { describeErrors } from './validation.js'

/**
 * `tools/call`. Arguments are checked against the tool's compiled input schema; arguments that fail
 * it and a handler that throws both become an `isError` result naming the problem, as MCP wants tool
 * failures reported to the model (SEP-1303); a protocol error (`McpError`) is passed through. A round that needs input
 * answers `input_required` (see {@link runRound}). The answer is a value when the handler answered
 * at once, else a promise (see {@link MaybePromise}); a refusal before the handler runs is thrown.
 */
export function callTool(
  server: McpServer,
  name: string,
  body: CallToolBody,
  ctx: CallContext
): MaybePromise<Record<string, unknown>> {
  const entry = server.tools.get(name) ?? server.unlistedTool?.(name)
  if (entry === undefined) throw errors.unknownTool(name)
  // Scopes before arguments (a caller without them learns nothing of the input): 403 -32600 with an
  // RFC 6750 insufficient_scope challenge. Anonymous callers exist only without authentication,
  // where no token carries scopes; the check is then off.
  const principal = ctx.principal
  if (!principal.anonymous && entry.scopes.some((s) => !principal.scopes.includes(s))) {
    throw errors.insufficientScope(`tool ${name}`, entry.scopes)
  }
  const args = body.arguments ?? {}
  // SEP-1303: arguments that fail the input schema are a tool execution error the model can read
  // and correct, not a protocol error; a body that is not a call at all was refused by the face.
  if (!entry.validateInput(args)) {
    return toolError(ctx, `Invalid arguments for tool ${name}: ${describeErrors(entry.validateInput.errors).message}`)
  }
  const takes = entry.task.mode !== 'forbidden' && clientTakesTasks(ctx.clientCapabilities)
  if (entry.task.mode === 'required' && !takes) {
    throw errors.missingCapability(TASKS_CAPABILITY, `Tool ${name} runs only as a task: declare the ${TASKS_EXTENSION} extension`)
  }
  const binding = new LazyTarget('tools/call', name, args)
  ctx.requestedTask = body.task
  ctx.resumed = openResume(server.sealer, binding, ctx)
  let round
  try {
    round = runRound<ToolReturn<unknown> | { [STARTED]: TaskRecord }>(
      server,
      entry.mrtr,
      binding,
      args,
      body,
      ctx,
      handlerOf(server, entry, name, args, body, takes)
    )
  } catch (err) {
    return handlerFailed(ctx, name, err)
  }
  if (!isThenable(round)) return answerOf(server, entry, name, binding, ctx, round)
  return round.then(
    (r) => answerOf(server, entry, name, binding, ctx, r),
    (err: unknown) => handlerFailed(ctx, name, err)
  )
}

/**
 * What a round runs: the handler's own value or promise, with no async frame around it; or, for a
 * client that takes tasks, the task that runs it. Built apart from {@link callTool}, so that a task
 * running for an hour keeps nothing of the HTTP request's context (its closures would share it).
 */
function handlerOf(
  server: McpServer,
  entry: ToolEntry,
  name: string,
  args: Record<string, unknown>,
  body: CallToolBody,
  takes: boolean
): (c: CallContext) => MaybePromise<ToolReturn<unknown> | { [STARTED]: TaskRecord }> {
  if (!takes) return (c) => entry.handler(args, c)
  return (c) => {
    // Any multi round-trip exchange (resolvers) is over by now; the work goes on as a task.
    const options = {
      ttlMs: Math.min(body.task?.ttl ?? entry.task.ttlMs, entry.task.ttlMs),
      pollIntervalMs: entry.task.pollIntervalMs,
      notify: body.task?.notify === true
    }
    return startTask(server, c, options, (tc) => entry.handler(args, tc), (out, tc) =>
      toolResult(entry, name, out as ToolReturn<unknown>, tc)
    ).then((started) => ({ [STARTED]: started }))
  }
}

/** A round's end as the call's answer. A result that breaks the tool's output schema is thrown (500). */
function answerOf(
  server: McpServer,
  entry: ToolEntry,
  name: string,
  binding: LazyTarget,
  ctx: CallContext,
  round: RunResult<ToolReturn<unknown> | { [STARTED]: TaskRecord }>
): Record<string, unknown> {
  if (round.kind === 'input_required') return round.result
  if (round.kind === 'declined') return toolError(ctx, round.message)
  const out = round.value
  if (typeof out === 'object' && out !== null && STARTED in out) return createTaskResult(out[STARTED])
  const result = toolResult(entry, name, out, ctx)
  return finish(ctx.era, isResumable(out) ? finishResumable(server.sealer, binding, ctx, result, out[RESUME]) : result)
}

/** A failure in a round: a protocol error passes; a handler's own failure is an `isError` result for the model. */
function handlerFailed(ctx: CallContext, name: string, err: unknown): Record<string, unknown> {
  const wire = wireErrorOf(err)
  if (wire !== undefined) throw wire
  if (err instanceof ConfigurationError) {
    ctx.log.error({ err, tool: name }, 'tool misuses the library')
    throw errors.internal()
  }
  // Failed because its caller cancelled it (a gateway's upstream request is, with the call): nothing
  // went wrong here, and a client that goes away mid-call is no news for an operator.
  if (ctx.cancelled) ctx.log.debug({ err, tool: name }, 'tool call cancelled')
  else ctx.log.warn({ err, tool: name }, 'tool handler failed')
  return toolError(ctx, messageOf(err))
}

const STARTED = Symbol('task started')

/**
 * A handler's return saying it made itself a task with `startTask` (the gateway does, for an upstream
 * call still running after a while): the call answers that task's CreateTaskResult (202).
 */
export function taskStarted(task: TaskRecord): ToolReturn<unknown> {
  return { [STARTED]: task } as never
}

/**
 * A handler's return as a CallToolResult: a string is one text block; structured output also comes
 * as text (MCP's backwards compatibility); with an output schema, a non-error result must match it.
 */
function toolResult(entry: ToolEntry, name: string, out: ToolReturn<unknown>, ctx: RequestContext): Record<string, unknown> {
  const result: Record<string, unknown> =
    typeof out === 'string' ? { content: [{ type: 'text', text: out }] } : copyOf(out as Record<string, unknown>)
  if (result.structuredContent !== undefined && result.content === undefined) {
    result.content = [{ type: 'text', text: JSON.stringify(result.structuredContent) }] satisfies ContentBlock[]
  }
  result.content ??= []
  if (entry.validateOutput !== undefined && result.isError !== true) {
    const sc = result.structuredContent
    const problem =
      sc === undefined
        ? 'structuredContent is missing'
        : entry.validateOutput(sc)
          ? undefined
          : describeErrors(entry.validateOutput.errors).message
    if (problem !== undefined) {
      ctx.log.error({ tool: name, problem }, 'tool result does not match its outputSchema')
      throw errors.outputSchema(name, problem)
    }
  }
  return result
}

function toolError(ctx: RequestContext, text: string): Record<string, unknown> {
  return finish(ctx.era, { content: [{ type: 'text', text }], isError: true })
}
