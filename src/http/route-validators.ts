import { AjvCompiler, type BuildCompilerFromPool, type RouteDefinition } from '@fastify/ajv-compiler'

type Build = BuildCompilerFromPool
type Validate = ReturnType<ReturnType<Build>>
// What Fastify calls the compiler with, though the package's types say a bare schema.
type Compile = (route: RouteDefinition) => Validate

/**
 * Fastify's route validators, compiled once per process instead of once per server. By default
 * each Fastify instance makes its own Ajv (compiling Ajv's meta-schema and adding formats, ~25 ms)
 * and compiles every route schema again (~40 ms for ours): a process that builds many servers (a
 * gateway's mounts, an app's tenants, a test file) paid both for each. Here servers with the same
 * shared schemas and Ajv options share one Ajv (the pool of @fastify/ajv-compiler, keyed by both),
 * and a route schema whose JSON was compiled before reuses that function: validators are pure, so
 * equal schemas under equal options validate alike. Only the first object of each distinct JSON
 * reaches Ajv, whose cache keeps schemas by identity; the distinct JSONs of routes are a set fixed by
 * the code, bounded here all the same: past LIMIT a schema is compiled by the server's own Ajv, as
 * Fastify would, and kept by no one.
 */
const LIMIT = 1000
const pool = AjvCompiler()
const compiled = new WeakMap<Compile, Map<string, Validate>>()

export const sharedRouteValidators: Build = (externalSchemas, options) => {
  const shared = pool(externalSchemas, options) as unknown as Compile
  let byJson = compiled.get(shared)
  if (byJson === undefined) compiled.set(shared, (byJson = new Map()))
  const known = byJson
  let own: Compile | undefined
  const compile: Compile = (route) => {
    const json = JSON.stringify(route.schema)
    const found = known.get(json)
    if (found !== undefined) return found
    if (known.size >= LIMIT) return (own ??= AjvCompiler()(externalSchemas, options) as unknown as Compile)(route)
    const validate = shared(route)
    known.set(json, validate)
    return validate
  }
  return compile as unknown as ReturnType<Build>
}
