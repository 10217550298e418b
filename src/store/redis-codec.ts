import type { ServerMessage, TaskRecord, TaskText } from './types.js'

type TaskPatch = Partial<Omit<TaskRecord, 'taskId' | 'createdAt'>>

/** Each value as JSON, flat `[key, json, key, json...]`. */
const pairs = (o: Record<string, unknown>) => Object.entries(o).flatMap(([k, v]) => [k, JSON.stringify(v)])

/** The arguments of `mcpCreateTask` after the ttl: has-inputs flag, pair count, the fields, the inputs. */
export function createArgs(task: TaskRecord): (string | number)[] {
  const fields: string[] = []
  for (const [k, v] of Object.entries(task)) if (k !== 'inputRequests' && v !== undefined) fields.push(k, JSON.stringify(v))
  return [task.inputRequests === undefined ? 0 : 1, fields.length / 2, ...fields, ...pairs(task.inputRequests ?? {})]
}

/** The arguments of `mcpUpdateTask` after the stamp: inputs mode, fields to set, fields to delete, inputs. */
export function patchArgs(patch: TaskPatch): (string | number)[] {
  const set: string[] = []
  const del: string[] = []
  for (const [k, v] of Object.entries(patch)) {
    if (k === 'inputRequests' || k === 'taskId' || k === 'createdAt') continue
    if (v === undefined) del.push(k)
    else set.push(k, JSON.stringify(v))
  }
  const ir = !('inputRequests' in patch) ? 'keep' : patch.inputRequests === undefined ? 'del' : 'set'
  return [ir, set.length / 2, ...set, del.length, ...del, ...pairs(patch.inputRequests ?? {})]
}

/** Answers as `mcpAnswerTask` takes them. */
export const answerArgs = pairs

/** A task from its hash fields (JSON values) and its outstanding input requests. */
export function toTask([fields, inputs]: [string[], string[]]): TaskRecord {
  const task: Record<string, unknown> = {}
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] !== 'inputRequests') task[fields[i]!] = JSON.parse(fields[i + 1]!)
  }
  if (fields.some((f, i) => i % 2 === 0 && f === 'inputRequests')) {
    const requests: Record<string, ServerMessage> = {}
    for (let i = 0; i < inputs.length; i += 2) requests[inputs[i]!] = JSON.parse(inputs[i + 1]!) as ServerMessage
    task.inputRequests = requests
  }
  return task as unknown as TaskRecord
}

/**
 * A task's wire form (tasks/get) as JSON text straight from its hash fields, which hold JSON values:
 * nothing decoded but the status and poll interval, nothing encoded again. The same text as
 * `JSON.stringify({ resultType: 'complete', ...detailedTask(toTask(found)) })`.
 */
export function taskText([fields, inputs]: [string[], string[]]): TaskText {
  let json = '{"resultType":"complete"'
  let status = 'working'
  let pollIntervalMs = 0
  let asking = false
  let leaseUntil: number | undefined
  let pending = false
  for (let i = 0; i < fields.length; i += 2) {
    const k = fields[i]!
    const v = fields[i + 1]!
    if (k === 'inputRequests') {
      asking = true
      continue
    }
    if (k === 'notify') continue
    if (k === 'notifyPending') {
      pending = true
      continue
    }
    if (k === 'leaseUntil') {
      leaseUntil = JSON.parse(v) as number
      continue
    }
    if (k === 'status') status = JSON.parse(v) as string
    else if (k === 'pollIntervalMs') pollIntervalMs = JSON.parse(v) as number
    json += `,${JSON.stringify(k)}:${v}`
  }
  if (asking) {
    json += ',"inputRequests":{'
    for (let i = 0; i < inputs.length; i += 2) json += `${i === 0 ? '' : ','}${JSON.stringify(inputs[i])}:${inputs[i + 1]}`
    json += '}'
  }
  const text: TaskText = { status: status as TaskText['status'], pollIntervalMs, json: `${json}}` }
  if (leaseUntil !== undefined) text.leaseUntil = leaseUntil
  if (pending) text.notifyPending = true
  return text
}
