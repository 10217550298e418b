import t from 'tap'
import type { RouteDefinition } from '@fastify/ajv-compiler'
import { sharedRouteValidators } from '../../src/http/route-validators.js'
import { build, call } from '../helpers/helper.js'

type Validate = ((data: unknown) => boolean) & { errors?: unknown[] | null }
const route = (schema: unknown) => ({ schema, method: 'POST', url: '/x', httpPart: 'body' }) as RouteDefinition
// Options of these tests' own (Fastify's keys them with the shared schemas): no other server shares their Ajv.
const options = (marker: string) => ({ customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, $comment: marker } }) as never

t.test('equal route schemas under equal options share one compiled validator across servers', async (t) => {
  const one = sharedRouteValidators({}, options('share'))
  const two = sharedRouteValidators({}, options('share'))
  const schema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }
  const first = one(route(schema) as never) as unknown as Validate
  t.equal(two(route(structuredClone(schema)) as never), first, 'another server, an equal schema of its own: the same function')
  t.equal(first({ n: 1 }), true)
  t.equal(first({ n: 'one' }), false)
  t.match(first.errors, [{ instancePath: '/n', keyword: 'type' }], 'errors read right after the call, as Fastify does')
  t.not(one(route({ ...schema, required: [] }) as never), first, 'another schema: another function')
  t.not(sharedRouteValidators({}, options('other'))(route(schema) as never), first, 'other options: another Ajv')
})

t.test('past a thousand distinct schemas, a server compiles its own and keeps nothing', async (t) => {
  const compile = sharedRouteValidators({}, options('bound'))
  for (let i = 0; i < 1000; i++) compile(route({ type: 'string', maxLength: i }) as never)
  const schema = { type: 'string', minLength: 2 }
  const a = compile(route(schema) as never) as unknown as Validate
  const b = sharedRouteValidators({}, options('bound'))(route(schema) as never) as unknown as Validate
  t.not(a, b, 'not shared: the map is full')
  t.same([a('ab'), a('a'), b('ab'), b('a')], [true, false, true, false], 'and each validates as it should')
  t.equal(compile(route({ type: 'string', maxLength: 7 }) as never), sharedRouteValidators({}, options('bound'))(route({ type: 'string', maxLength: 7 }) as never), 'what was shared stays shared')
})

t.test('two servers in one process answer bad input alike', async (t) => {
  const [a, b] = await Promise.all([build(t), build(t)])
  for (const { app } of [a, b]) {
    const res = await call(app, { method: 'POST', url: '/tools/echo/calls', payload: { arguments: 'not an object' } })
    t.same([res.status, res.body.code], [400, -32602], 'arguments that are not an object are refused by the shared body validator')
  }
})

// Fastify's Ajv options say addUsedSchema: false, so an $id is not registered: two servers' schemas
// under one $id with other JSON do not collide in the shared Ajv.
t.test('schemas under one $id with other JSON validate each by its own', async (t) => {
  const first = sharedRouteValidators({}, options('ids'))(route({ $id: 'https://example.com/thing', type: 'string' }) as never) as unknown as Validate
  const second = sharedRouteValidators({}, options('ids'))(route({ $id: 'https://example.com/thing', type: 'number' }) as never) as unknown as Validate
  t.same([first('a'), first(1), second('a'), second(1)], [true, false, false, true], 'each validates by its own schema')
  t.equal(sharedRouteValidators({}, options('ids'))(route({ $id: 'https://example.com/thing', type: 'string' }) as never), first, 'the same JSON is still shared')
})
