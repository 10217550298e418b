import type { FastifyInstance } from 'fastify'
import { errors } from '../errors.js'
import { jsonProblem } from '../core/json-limits.js'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * The MCP routes' `application/json` parser, in place of Fastify's: the bytes must be UTF-8 (a
 * malformed sequence is 400, never replaced by U+FFFD as a string decoder would), the text JSON
 * (-32700), and the value within {@link jsonProblem}'s limits (400 -32602 saying what is refused:
 * a `__proto__` key, nesting past the limit, a number that is not finite).
 */
export function parseJsonBodies(fastify: FastifyInstance): void {
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
}

/** Decode, parse and check one body (see {@link parseJsonBodies}). */
export function parseJsonBody(bytes: Buffer): unknown {
  if (bytes.length === 0) throw errors.invalidRequest('The body must not be empty when Content-Type is application/json')
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw errors.parse('Parse error: the body is not valid UTF-8')
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw errors.parse()
  }
  const problem = jsonProblem(value)
  if (problem !== undefined) throw errors.invalidParams(`Invalid body: it ${problem}`)
  return value
}
