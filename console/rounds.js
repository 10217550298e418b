// One round of questions from the server (the `inputRequests` of an input_required answer, or of
// a task waiting for input) as one form: a part per request, answered by hand, and one "Send".
import { el, json, uid } from './dom.js'
import { schemaFields } from './schema-form.js'

const ACTIONS = ['accept', 'decline', 'cancel']

/** accept / decline / cancel; the fields take part only when accepting. */
function actionChoice(fields) {
  const id = uid('action')
  const select = el('select', { id })
  for (const action of ACTIONS) select.append(el('option', { value: action }, action))
  // A disabled fieldset's controls are neither validated nor sent: declining needs no answers.
  select.addEventListener('change', () => (fields.disabled = select.value !== 'accept'))
  return { element: el('div', { class: 'field' }, el('label', { for: id }, 'Answer'), select), action: () => select.value }
}

function elicitation(params) {
  const parts = [el('p', { class: 'message' }, String(params.message ?? ''))]
  if (params.mode === 'url') {
    const url = String(params.url ?? '')
    // A link only to a web page, which the user opens (in a tab of its own) and finishes there.
    const safe = /^https?:\/\//i.test(url)
    parts.push(el('p', {}, 'Open: ', safe ? el('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, url) : url))
    const choice = actionChoice(el('fieldset'))
    parts.push(choice.element)
    return { parts, answer: () => ({ action: choice.action() }) }
  }
  const { element, read } = schemaFields(params.requestedSchema ?? {})
  const fields = el('fieldset', { class: 'plain' }, el('legend', { class: 'visually-hidden' }, 'Your answers'), element)
  const choice = actionChoice(fields)
  parts.push(fields, choice.element)
  return {
    parts,
    answer: () => {
      if (choice.action() !== 'accept') return { action: choice.action() }
      const content = read()
      return content === undefined ? undefined : { action: 'accept', content }
    }
  }
}

/** A sampling request is shown whole; the user writes the model's reply. */
function sampling(params) {
  const reply = uid('reply')
  const model = uid('model')
  const text = el('textarea', { id: reply, rows: 4, required: true })
  const name = el('input', { id: model, type: 'text', value: 'a person at the MCP console', required: true })
  const parts = [
    el('p', { class: 'message' }, 'The server asks for a completion (sampling). Its request:'),
    json(params),
    el('div', { class: 'field' }, el('label', { for: reply }, 'Reply'), text),
    el('div', { class: 'field' }, el('label', { for: model }, 'Model'), name)
  ]
  return { parts, answer: () => ({ role: 'assistant', content: { type: 'text', text: text.value }, model: name.value, stopReason: 'endTurn' }) }
}

/** Roots the user types, one file:// URI a line. */
function roots() {
  const id = uid('roots')
  const area = el('textarea', { id, rows: 3, class: 'code', placeholder: 'file:///home/me/project', 'aria-describedby': `${id}-help` })
  const parts = [
    el('p', { class: 'message' }, 'The server asks for your roots (roots/list).'),
    el('div', { class: 'field' }, el('label', { for: id }, 'Roots'), area, el('small', { id: `${id}-help`, class: 'help' }, 'One file:// URI a line.'))
  ]
  return {
    parts,
    answer: () => ({ roots: area.value.split('\n').map((l) => l.trim()).filter((l) => l !== '').map((uri) => ({ uri })) })
  }
}

/** A request this page does not know: its answer as JSON, typed by hand. */
function unknown(request) {
  const id = uid('answer')
  const area = el('textarea', { id, rows: 4, class: 'code', required: true })
  area.addEventListener('input', () => area.setCustomValidity(''))
  const parts = [json(request), el('div', { class: 'field' }, el('label', { for: id }, 'Answer (JSON)'), area)]
  return {
    parts,
    answer: () => {
      try {
        return JSON.parse(area.value)
      } catch (err) {
        area.setCustomValidity(`Not JSON: ${err.message}`)
        return undefined
      }
    }
  }
}

function part(key, request) {
  const params = request?.params ?? {}
  switch (request?.method) {
    case 'elicitation/create': return elicitation(params)
    case 'sampling/createMessage': return sampling(params)
    case 'roots/list': return roots()
    default: return unknown(request)
  }
}

/**
 * The form of one round. `onSend` gets the answers under the requests' keys; the form then gives
 * way to what was sent, so that only the open round has a "Send" button.
 * @param {Record<string, { method: string, params?: object }>} inputRequests
 * @param {(inputResponses: Record<string, unknown>) => void} onSend
 */
export function roundForm(inputRequests, onSend) {
  const form = el('form', { class: 'round' })
  const answers = []
  for (const [key, request] of Object.entries(inputRequests ?? {})) {
    const { parts, answer } = part(key, request)
    form.append(el('fieldset', {}, el('legend', {}, `${key}: ${String(request?.method ?? 'unknown request')}`), ...parts))
    answers.push([key, answer])
  }
  form.append(el('div', { class: 'actions' }, el('button', { type: 'submit' }, 'Send')))
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const responses = {}
    for (const [key, answer] of answers) {
      const value = answer()
      if (value === undefined) return form.reportValidity()
      responses[key] = value
    }
    form.replaceWith(el('div', { class: 'sent' }, el('p', {}, 'Sent:'), json(responses)))
    onSend(responses)
  })
  return form
}
