import { ConfigurationError } from '../errors.js'

/**
 * RFC 6570 URI templates, the subset resource templates need: level 1 simple expansion `{var}`
 * (a value without reserved characters) and level 2 reserved expansion `{+var}` (may contain `/`).
 * Compiled once into a matcher that extracts the variables of a concrete URI.
 */
export class UriTemplate {
  readonly variables: readonly string[]
  readonly #regex: RegExp

  constructor(readonly template: string) {
    const vars: string[] = []
    let pattern = '^'
    let last = 0
    for (const m of template.matchAll(/\{([+]?)([A-Za-z0-9_.%]+)\}/g)) {
      pattern += escapeRegex(template.slice(last, m.index))
      const name = m[2]!
      if (vars.includes(name)) throw new ConfigurationError(`URI template ${template}: variable ${name} appears twice`)
      vars.push(name)
      pattern += m[1] === '+' ? '(.+?)' : '([^/?#&=,]+)'
      last = m.index + m[0].length
    }
    const rest = template.slice(last)
    if (/[{}]/.test(rest) || /[{}]/.test(template.slice(0, last).replace(/\{[+]?[A-Za-z0-9_.%]+\}/g, ''))) {
      throw new ConfigurationError(`URI template ${template}: only {var} and {+var} expressions are supported`)
    }
    pattern += escapeRegex(rest) + '$'
    this.variables = vars
    this.#regex = new RegExp(pattern)
  }

  /** The variables of `uri`, percent-decoded, or undefined when it does not match. */
  match(uri: string): Record<string, string> | undefined {
    const m = this.#regex.exec(uri)
    if (m === null) return undefined
    const out: Record<string, string> = {}
    for (let i = 0; i < this.variables.length; i++) {
      try {
        out[this.variables[i]!] = decodeURIComponent(m[i + 1]!)
      } catch {
        return undefined
      }
    }
    return out
  }

  /** Expand the template with values (simple expansion percent-encodes reserved characters). */
  expand(values: Record<string, string>): string {
    return this.template.replace(/\{([+]?)([A-Za-z0-9_.%]+)\}/g, (_, plus: string, name: string) => {
      const v = values[name] ?? ''
      return plus === '+' ? encodeURI(v) : encodeURIComponent(v)
    })
  }
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
