// The console: the catalogue in a sidebar, the chosen item's form, and each exchange with the
// server step by step (requests, rounds of questions, progress, task status, the result).
import { el, json, uid } from './dom.js'
import { capabilities, get, headerJson, refusals, send, streamedCall, token } from './http.js'
import { roundForm } from './rounds.js'
import { schemaFields } from './schema-form.js'
import { showView, viewOf } from './apps.js'

const $ = (id) => document.getElementById(id)
const status = (text) => ($('status').textContent = text)
const TERMINAL = new Set(['completed', 'failed', 'cancelled'])
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
let progressTokens = 0

// ---- Exchanges: one per call, newest first, each a list of steps. ----

function exchange(title) {
  const steps = el('ol', { class: 'steps' })
  const item = el('li', { class: 'exchange' }, el('h3', {}, title), steps)
  $('exchanges').prepend(item)
  return {
    step(label, value, kind = '') {
      const step = el('li', { class: `step ${kind}` }, el('h4', {}, label))
      if (value !== undefined) step.append(json(value))
      steps.append(step)
      return step
    },
    /** A step whose JSON is folded away (requests and raw answers: the rounds show what matters). */
    folded(label, value, kind) {
      const step = el('li', { class: `step ${kind}` }, el('details', {}, el('summary', {}, label), json(value)))
      steps.append(step)
      return step
    },
    /** A round of questions; resolves with the answers once "Send" is pressed. */
    round(label, inputRequests) {
      const step = this.step(label, undefined, 'round')
      return new Promise((resolve) => step.append(roundForm(inputRequests, resolve)))
    }
  }
}

function showError(x, answer) {
  const label = answer.status === 0 ? 'Error' : `Error (HTTP ${answer.status})`
  x.step(label, answer.body, 'error')
  if (answer.status === 401) status('The server needs an access token: paste one above and press "Use token".')
}

/**
 * A request and its rounds: `request(retry)` sends it (the retry carries `inputResponses` and
 * `requestState`); an input_required answer becomes a form, and the same request goes again with
 * the answers. Answers the final result, or undefined after an error.
 */
async function converse(x, request) {
  let retry
  for (let round = 1; ; round++) {
    const answer = await request(retry)
    if (!answer.ok) return showError(x, answer)
    const result = answer.body
    if (result?.resultType !== 'input_required') return result
    x.folded('Answer: input required', result, 'answer')
    const inputResponses = await x.round(`Round ${round}: the server asks`, result.inputRequests)
    retry = { inputResponses, requestState: result.requestState }
  }
}

/** A result that is a part (`_meta.nextResumeToken`) offers to go on. */
function showResult(x, result, again) {
  const step = x.step('Result', result, 'result')
  const next = result?._meta?.nextResumeToken
  if (typeof next !== 'string') return
  const button = el('button', { type: 'button' }, 'Continue')
  button.addEventListener('click', () => {
    button.remove()
    again(next)
  }, { once: true })
  step.append(button)
}

/** The progress of a streamed call: a bar and each message as it comes. */
function progressView(x) {
  let bar, log, label
  return (notification) => {
    if (notification?.method === 'notifications/message') return x.step(`Log (${notification.params?.level})`, notification.params?.data, 'log')
    if (notification?.method !== 'notifications/progress') return x.step(String(notification?.method), notification?.params)
    const { progress, total, message } = notification.params ?? {}
    if (bar === undefined) {
      const id = uid('progress')
      bar = el('progress', { id })
      label = el('label', { for: id }, 'Progress')
      log = el('ol', { class: 'progress-log' })
      x.step('Progress', undefined, 'progress').append(label, bar, log)
    }
    if (typeof total === 'number' && total > 0) bar.max = total
    if (typeof progress === 'number') bar.value = progress
    log.append(el('li', {}, `${progress}${typeof total === 'number' ? ` of ${total}` : ''}${message === undefined ? '' : `: ${message}`}`))
  }
}

// ---- Tools ----

async function callTool(tool, args, asTask, resumeToken) {
  const x = exchange(`tools/call ${tool.name}`)
  const path = `tools/${encodeURIComponent(tool.name)}/calls`
  const result = await converse(x, (retry) => {
    const meta = { progressToken: `console-${++progressTokens}`, ...capabilities(asTask), ...(resumeToken === undefined ? {} : { resumeToken }) }
    const body = { arguments: args, ...retry, _meta: meta, ...(asTask ? { task: { notify: true } } : {}) }
    x.folded(`Request: POST ${path}`, body, 'request')
    return streamedCall(path, body, progressView(x))
  })
  if (result === undefined) return
  if (result.resultType === 'task') return followTask(x, result)
  showResult(x, result, (next) => callTool(tool, args, asTask, next))
  if (viewOf(tool) !== undefined) await showView(x, tool, args, result, (name) => listedTools.get(name))
}

/**
 * Follow a task to its end: poll it at its pollIntervalMs, show each change of status, answer
 * its questions (tasks/update), and offer to cancel it while it runs.
 */
async function followTask(x, created) {
  const id = created.taskId
  const path = `tasks/${encodeURIComponent(id)}`
  x.folded('Answer: a task', created, 'answer')
  const step = x.step(`Task ${id}`, undefined, 'task')
  const now = el('p', { class: 'task-status', role: 'status' })
  const log = el('ol', { class: 'progress-log' })
  const cancel = el('button', { type: 'button' }, 'Cancel')
  step.append(now, log, cancel)
  cancel.addEventListener('click', async () => {
    cancel.disabled = true
    const answer = await send('POST', `${path}/cancel`, { body: { _meta: capabilities(true) } })
    if (!answer.ok) showError(x, answer)
  })
  let task = created
  let shown = ''
  const asked = new Set()
  for (;;) {
    const line = `${task.status}${task.statusMessage === undefined ? '' : `: ${task.statusMessage}`}`
    if (line !== shown) {
      now.textContent = `Status: ${line}`
      log.append(el('li', {}, line))
      shown = line
    }
    if (TERMINAL.has(task.status)) break
    const questions = Object.entries(task.inputRequests ?? {}).filter(([key]) => !asked.has(key))
    if (task.status === 'input_required' && questions.length > 0) {
      for (const [key] of questions) asked.add(key)
      // Polling goes on while the user answers: the task may end or be cancelled meanwhile.
      x.round('The task asks', Object.fromEntries(questions)).then(async (inputResponses) => {
        const answer = await send('POST', `${path}/update`, { body: { inputResponses, _meta: capabilities(true) } })
        if (!answer.ok) showError(x, answer)
      })
    }
    await sleep(Math.min(Math.max(task.pollIntervalMs ?? 1000, 250), 5000))
    const answer = await get(path, { tasks: true })
    if (!answer.ok) {
      showError(x, answer)
      break
    }
    task = answer.body
  }
  cancel.remove()
  if (task.status === 'completed') showResult(x, task.result, () => {})
  else if (task.error !== undefined) x.step('Error', task.error, 'error')
  checkNotifications()
}

function toolForm(tool) {
  const form = el('form', { class: 'call' })
  const { element, read } = schemaFields(tool.inputSchema ?? {})
  form.append(element)
  const support = tool.execution?.taskSupport
  let asTask
  if (support === 'optional' || support === 'required') {
    const id = uid('task')
    asTask = el('input', { id, type: 'checkbox', checked: support === 'required', disabled: support === 'required' })
    form.append(el('div', { class: 'field check' }, el('label', { for: id }, 'Run as a task'), asTask))
  }
  form.append(el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Call')))
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const args = read()
    if (args === undefined) return form.reportValidity()
    callTool(tool, args, asTask?.checked === true).finally(checkNotifications)
  })
  return form
}

// ---- Prompts and resources: GETs with the parameters in headers. ----

async function getPrompt(prompt, args) {
  const x = exchange(`prompts/get ${prompt.name}`)
  const path = `prompts/${encodeURIComponent(prompt.name)}`
  const result = await converse(x, (retry) => readWith(x, path, { 'mcp-arguments': args }, retry))
  if (result !== undefined) showResult(x, result, () => {})
}

async function readResource(uri, resumeToken) {
  const x = exchange(`resources/read ${uri}`)
  const path = `resources/${encodeURIComponent(uri)}`
  const result = await converse(x, (retry) => readWith(x, path, {}, retry, resumeToken))
  if (result !== undefined) showResult(x, result, (next) => readResource(uri, next))
}

function readWith(x, path, params, retry, resumeToken) {
  const meta = { ...capabilities(), ...(resumeToken === undefined ? {} : { resumeToken }) }
  const headers = { 'mcp-meta': meta, ...params }
  if (retry !== undefined) {
    headers['mcp-input-responses'] = retry.inputResponses
    headers['mcp-request-state'] = retry.requestState
  }
  x.folded(`Request: GET ${path}`, headers, 'request')
  // JSON headers as the binding spells them; the request state goes as it is.
  const sent = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, typeof value === 'string' ? value : headerJson(value)]))
  return send('GET', path, { headers: sent })
}

/** The variables of an RFC 6570 template, and the URI with them filled in (levels 1 to 3). */
function templateVariables(template) {
  return [...template.matchAll(/\{([+#./;?&]?)([^}]+)\}/g)].flatMap((m) => m[2].split(',').map((v) => v.replace(/[*]$|:\d+$/, '')))
}

function expand(template, values) {
  const enc = (v, reserved) => (reserved ? encodeURI(v) : encodeURIComponent(v))
  return template.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_m, op, list) => {
    const names = list.split(',').map((v) => v.replace(/[*]$|:\d+$/, '')).filter((n) => values[n] !== undefined)
    if (names.length === 0) return ''
    const reserved = op === '+' || op === '#'
    const first = { '': '', '+': '', '#': '#', '.': '.', '/': '/', ';': ';', '?': '?', '&': '&' }[op]
    const sep = { '': ',', '+': ',', '#': ',', '.': '.', '/': '/', ';': ';', '?': '&', '&': '&' }[op]
    const named = op === ';' || op === '?' || op === '&'
    return first + names.map((n) => (named ? `${n}=` : '') + enc(String(values[n]), reserved)).join(sep)
  })
}

function simpleForm(schema, button, onSubmit) {
  const form = el('form', { class: 'call' })
  const { element, read } = schemaFields(schema)
  form.append(element, el('div', { class: 'actions' }, el('button', { type: 'submit' }, button)))
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const values = read()
    if (values === undefined) return form.reportValidity()
    onSubmit(values).finally(checkNotifications)
  })
  return form
}

const stringsSchema = (names, required) => ({
  type: 'object',
  properties: Object.fromEntries(names.map(([name, description]) => [name, { type: 'string', ...(description === undefined ? {} : { description }) }])),
  required
})

// ---- The catalogue ----

/** The tools listed so far, by name: what a view may call (see apps.js). */
const listedTools = new Map()

const KINDS = {
  tools: {
    path: 'tools',
    key: 'tools',
    label: (t) => t.title ?? t.annotations?.title ?? t.name,
    form: (t) => toolForm(t)
  },
  prompts: {
    path: 'prompts',
    key: 'prompts',
    label: (p) => p.title ?? p.name,
    form: (p) => {
      const args = Array.isArray(p.arguments) ? p.arguments : []
      const schema = stringsSchema(args.map((a) => [a.name, a.description]), args.filter((a) => a.required).map((a) => a.name))
      return simpleForm(schema, 'Get', (values) => getPrompt(p, values))
    }
  },
  resources: {
    path: 'resources',
    key: 'resources',
    label: (r) => r.title ?? r.name ?? r.uri,
    form: (r) => simpleForm({ type: 'object', properties: {} }, 'Read', () => readResource(r.uri))
  },
  templates: {
    path: 'resources/templates',
    key: 'resourceTemplates',
    label: (r) => r.title ?? r.name ?? r.uriTemplate,
    form: (r) => {
      const names = templateVariables(String(r.uriTemplate))
      // A URI's parts: one line each.
      const schema = stringsSchema(names.map((n) => [n]), names)
      for (const property of Object.values(schema.properties)) property.maxLength = 1000
      return simpleForm(schema, 'Read', (values) => readResource(expand(String(r.uriTemplate), values)))
    }
  }
}

function select(kind, item, button) {
  for (const current of document.querySelectorAll('nav [aria-current]')) current.removeAttribute('aria-current')
  button.setAttribute('aria-current', 'true')
  const name = item.name ?? item.uri ?? item.uriTemplate
  $('item-title').textContent = `${KINDS[kind].label(item)}`
  const about = [String(name), item.uri ?? item.uriTemplate, item.description].filter((s) => typeof s === 'string' && s !== '')
  $('item-description').textContent = [...new Set(about)].join(' · ')
  $('item-form').replaceChildren(KINDS[kind].form(item))
}

/**
 * One page of a list into its sidebar section; with a `nextCursor`, a "More" button fetches the
 * next page on demand (a server may list thousands of resources). Answers the count shown, or
 * undefined when the list was refused.
 */
async function listPage(kind, cursor) {
  const { path, key, label } = KINDS[kind]
  const list = $(kind)
  const answer = await get(cursor === undefined ? path : `${path}?cursor=${encodeURIComponent(cursor)}`)
  if (cursor === undefined) list.replaceChildren()
  list.querySelector('.more')?.remove()
  if (!answer.ok) {
    list.append(el('li', { class: 'help' }, `Not available (${answer.body?.message ?? `HTTP ${answer.status}`})`))
    return answer.status === 401 ? undefined : 0
  }
  const items = Array.isArray(answer.body?.[key]) ? answer.body[key] : []
  if (kind === 'tools') {
    if (cursor === undefined) listedTools.clear()
    for (const item of items) if (typeof item?.name === 'string') listedTools.set(item.name, item)
  }
  list.append(...items.map((item) => {
    const name = String(item.name ?? item.uri ?? item.uriTemplate)
    const button = el('button', { type: 'button', title: name }, String(label(item)))
    button.addEventListener('click', () => select(kind, item, button))
    return el('li', {}, button)
  }))
  const next = answer.body?.nextCursor
  if (typeof next === 'string' && next !== '') {
    const more = el('button', { type: 'button' }, `More ${$(`${kind}-title`).textContent.toLowerCase()}`)
    more.addEventListener('click', () => listPage(kind, next), { once: true })
    list.append(el('li', { class: 'more' }, more))
  } else if (cursor === undefined && items.length === 0) {
    list.append(el('li', { class: 'help' }, 'None.'))
  }
  return list.querySelectorAll('li > button[title]').length
}

async function loadCatalogue() {
  const about = await get('discover')
  if (about.ok) {
    const info = about.body?.serverInfo ?? {}
    const name = String(info.title ?? info.name ?? 'MCP server')
    $('server-name').textContent = name
    document.title = `${name}: MCP console`
    // Instructions can be long: two lines here, the whole text on hover.
    const instructions = typeof about.body?.instructions === 'string' ? about.body.instructions : ''
    $('server-about').textContent = instructions
    $('server-about').title = instructions
  } else if (about.status === 401) {
    return
  }
  const counts = []
  for (const kind of Object.keys(KINDS)) {
    const count = await listPage(kind)
    if (count === undefined) return
    const more = $(kind).querySelector('.more') === null ? '' : '+'
    counts.push(`${count}${more} ${$(`${kind}-title`).textContent.toLowerCase()}`)
  }
  status(`Loaded ${counts.join(', ')}.`)
}

// ---- Notifications: GET /notifications, then acknowledge the group. ----

/** A line for the notifications the console knows. */
function describe(notification) {
  const p = notification?.params ?? {}
  switch (notification?.method) {
    case 'notifications/tasks': return `Task ${p.taskId}: ${p.status}${p.statusMessage === undefined ? '' : ` (${p.statusMessage})`}`
    case 'notifications/progress': return `${p.progressToken}: ${p.progress}${p.total === undefined ? '' : ` of ${p.total}`}${p.message === undefined ? '' : ` (${p.message})`}`
    case 'notifications/message': return `${p.level}: ${typeof p.data === 'string' ? p.data : JSON.stringify(p.data)}`
    case 'notifications/resources/updated': return String(p.uri)
    default: return undefined
  }
}

let checking = false
let refused = false
async function checkNotifications() {
  if (checking || refused) return
  checking = true
  try {
    const answer = await get('notifications')
    if (!answer.ok || !Array.isArray(answer.body)) return
    const list = $('notifications')
    for (const notification of answer.body) {
      const summary = describe(notification)
      list.prepend(el('li', {}, el('h3', {}, String(notification?.method)), summary === undefined ? null : el('p', {}, summary), el('details', {}, el('summary', {}, 'params'), json(notification?.params))))
    }
    const group = answer.headers.get('mcp-message-group')
    if (group !== null) await send('POST', 'notifications', { headers: { 'mcp-message-group': group } })
  } finally {
    checking = false
  }
}

// ---- Start ----

refusals.add(() => {
  refused = true
  status('The server needs an access token: paste one above and press "Use token".')
  $('token').focus()
})

$('token').value = token.get()
$('token-form').addEventListener('submit', (event) => {
  event.preventDefault()
  token.set($('token').value.trim().replace(/^bearer\s+/i, ''))
  refused = false
  loadCatalogue().then(checkNotifications)
})
$('forget-token').addEventListener('click', () => {
  token.set('')
  $('token').value = ''
  status('Token forgotten.')
})
$('reload').addEventListener('click', () => loadCatalogue())
$('check-notifications').addEventListener('click', () => {
  refused = false
  checkNotifications()
})
setInterval(() => {
  if ($('poll-notifications').checked && document.visibilityState === 'visible') checkNotifications()
}, 5000)
loadCatalogue().then(checkNotifications)
