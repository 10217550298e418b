// The one way this page builds its DOM: elements from names, text as Text nodes. Whatever a server
// sends (names, descriptions, messages, results) is only ever text here, never markup.

/**
 * An element with attributes (`null`/`false` leave one out, `true` sets it empty) and children
 * (strings become text).
 * @param {string} tag
 * @param {Record<string, string | number | boolean | null | undefined>} [attributes]
 * @param {...(Node | string | null | undefined)} children
 */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue
    element.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children) if (child !== undefined && child !== null) element.append(child)
  return element
}

let counter = 0
/** A fresh id for a control and its label. */
export function uid(hint) {
  return `c${++counter}-${String(hint).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)}`
}

/** Long opaque tokens, shortened for display (the page keeps and sends them whole). */
function shorten(key, value) {
  if (typeof value === 'string' && value.length > 48 && /^(requestState|nextResumeToken|resumeToken)$/.test(key)) return `${value.slice(0, 24)}…`
  return value
}

/** A JSON value as indented text in a <pre>. */
export function json(value) {
  return el('pre', { class: 'json' }, value === undefined ? '(no body)' : JSON.stringify(value, shorten, 2))
}
