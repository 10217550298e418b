// Form controls from a JSON Schema: the subset that tool input schemas and elicitation's
// requestedSchema use. An object's properties each get a labelled control: strings (a select for an
// enum or oneOf of consts, an input typed by format), numbers and integers (with their bounds),
// booleans, arrays of enum values (checkboxes); anything else is a JSON text area.
import { el, uid } from './dom.js'

const FORMATS = { email: 'email', uri: 'url', url: 'url', date: 'date', 'date-time': 'datetime-local' }

/** The one type of a schema (`["string", "null"]` is a string). */
function typeOf(schema) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  if (type !== undefined) return type
  if (Array.isArray(schema.enum)) return typeof schema.enum[0] === 'number' ? 'number' : 'string'
  return choices(schema) === undefined ? undefined : 'string'
}

/** The values of an enum, or of a oneOf/anyOf of consts, with their titles. */
function choices(schema) {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : []
    return schema.enum.map((value, i) => ({ value, title: String(names[i] ?? value) }))
  }
  const options = schema.oneOf ?? schema.anyOf
  if (Array.isArray(options) && options.length > 0 && options.every((o) => o !== null && typeof o === 'object' && 'const' in o)) {
    return options.map((o) => ({ value: o.const, title: String(o.title ?? o.const) }))
  }
  return undefined
}

function labelFor(id, name, schema, required) {
  return el('label', { for: id }, String(schema.title ?? name), required ? el('span', { class: 'required', 'aria-hidden': 'true' }, ' *') : null)
}

function help(id, schema) {
  return typeof schema.description === 'string' ? el('small', { id: `${id}-help`, class: 'help' }, schema.description) : null
}

/** A <select> of choices; optional ones start unset. */
function selectField(id, schema, list, required) {
  const select = el('select', { id, required })
  if (!required) select.append(el('option', { value: '' }, '(not set)'))
  list.forEach((choice, i) => select.append(el('option', { value: String(i) }, choice.title)))
  if (schema.default !== undefined) {
    const i = list.findIndex((c) => c.value === schema.default)
    if (i >= 0) select.value = String(i)
  }
  return { control: select, read: () => (select.value === '' ? { present: false } : { present: true, value: list[Number(select.value)].value }) }
}

function booleanField(id, schema, required) {
  // Unchecked is an answer only when the field is required or has a default; otherwise it can be unset.
  if (!required && typeof schema.default !== 'boolean') {
    return selectField(id, schema, [{ value: true, title: 'true' }, { value: false, title: 'false' }], false)
  }
  const box = el('input', { id, type: 'checkbox' })
  box.checked = schema.default === true
  return { control: box, read: () => ({ present: true, value: box.checked }) }
}

function numberField(id, schema, integer) {
  const input = el('input', {
    id,
    type: 'number',
    step: integer ? '1' : 'any',
    min: typeof schema.minimum === 'number' ? schema.minimum : undefined,
    max: typeof schema.maximum === 'number' ? schema.maximum : undefined,
    inputmode: integer ? 'numeric' : 'decimal'
  })
  if (typeof schema.default === 'number') input.value = String(schema.default)
  return { control: input, read: () => (input.value === '' ? { present: false } : { present: true, value: Number(input.value) }) }
}

function stringField(id, schema) {
  const format = FORMATS[schema.format]
  // Short or typed strings on one line; free text (no bound, or a long one) in a text area.
  const long = format === undefined && !(typeof schema.maxLength === 'number' && schema.maxLength <= 1000)
  const control = long ? el('textarea', { id, rows: 3 }) : el('input', { id, type: format ?? 'text' })
  if (typeof schema.minLength === 'number') control.minLength = schema.minLength
  if (typeof schema.maxLength === 'number') control.maxLength = schema.maxLength
  if (typeof schema.default === 'string') control.value = schema.default
  return {
    control,
    read: () => {
      if (control.value === '') return { present: false }
      // datetime-local has no zone: the instant in the browser's zone, as RFC 3339.
      return { present: true, value: format === 'datetime-local' ? new Date(control.value).toISOString() : control.value }
    }
  }
}

/** Checkboxes for an array of enum values. */
function multiField(id, name, schema, list, required) {
  const group = el('fieldset', { class: 'choices', id }, el('legend', {}, String(schema.title ?? name), required ? el('span', { class: 'required', 'aria-hidden': 'true' }, ' *') : null))
  const boxes = list.map((choice, i) => {
    const box = el('input', { type: 'checkbox', id: `${id}-${i}` })
    box.checked = Array.isArray(schema.default) && schema.default.includes(choice.value)
    group.append(el('span', { class: 'choice' }, box, el('label', { for: box.id }, choice.title)))
    return box
  })
  const read = () => {
    const value = list.filter((_c, i) => boxes[i].checked).map((c) => c.value)
    return value.length === 0 && !required ? { present: false } : { present: true, value }
  }
  return { group, read }
}

/** Any other schema: its JSON, checked when the form is read. */
function jsonField(id, schema) {
  const area = el('textarea', { id, rows: 4, class: 'code', spellcheck: 'false', placeholder: `JSON ${typeOf(schema) ?? 'value'}` })
  if (schema.default !== undefined) area.value = JSON.stringify(schema.default, null, 2)
  area.addEventListener('input', () => area.setCustomValidity(''))
  return {
    control: area,
    read: () => {
      if (area.value.trim() === '') return { present: false }
      try {
        return { present: true, value: JSON.parse(area.value) }
      } catch (err) {
        area.setCustomValidity(`Not JSON: ${err.message}`)
        return { present: false, invalid: true }
      }
    }
  }
}

function field(name, schema, required) {
  const id = uid(name)
  const type = typeOf(schema)
  const list = choices(schema)
  const items = schema.items !== null && typeof schema.items === 'object' ? choices(schema.items) : undefined
  if (type === 'array' && items !== undefined) {
    const { group, read } = multiField(id, name, schema, items, required)
    group.append(help(id, schema) ?? '')
    return { element: el('div', { class: 'field' }, group), read }
  }
  let made
  if (list !== undefined && type !== 'boolean') made = selectField(id, schema, list, required)
  else if (type === 'boolean') made = booleanField(id, schema, required)
  else if (type === 'number' || type === 'integer') made = numberField(id, schema, type === 'integer')
  else if (type === 'string') made = stringField(id, schema)
  else made = jsonField(id, schema)
  const { control, read } = made
  if (required && control.type !== 'checkbox') control.required = true
  if (typeof schema.description === 'string') control.setAttribute('aria-describedby', `${id}-help`)
  const element = el('div', { class: control.type === 'checkbox' ? 'field check' : 'field' }, labelFor(id, name, schema, required), control, help(id, schema))
  return { element, read }
}

/**
 * The controls of an object schema, and a reader of their values: `undefined` when a JSON field
 * does not parse (its control then says why, for the form's `reportValidity()`).
 * @param {object} schema an object schema (`properties`, `required`)
 * @returns {{ element: HTMLElement, read: () => Record<string, unknown> | undefined }}
 */
export function schemaFields(schema) {
  const properties = schema !== null && typeof schema === 'object' && schema.properties !== null && typeof schema.properties === 'object' ? schema.properties : {}
  const required = new Set(Array.isArray(schema?.required) ? schema.required : [])
  const element = el('div', { class: 'fields' })
  const readers = Object.entries(properties).map(([name, property]) => {
    const made = field(name, property !== null && typeof property === 'object' ? property : {}, required.has(name))
    element.append(made.element)
    return [name, made.read]
  })
  if (readers.length === 0) element.append(el('p', { class: 'help' }, 'No arguments.'))
  return {
    element,
    read: () => {
      const values = {}
      let ok = true
      for (const [name, read] of readers) {
        const { present, value, invalid } = read()
        if (invalid) ok = false
        if (present) values[name] = value
      }
      return ok ? values : undefined
    }
  }
}
