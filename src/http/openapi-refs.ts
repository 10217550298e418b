type Json = Record<string, any>

/** Keywords whose values are data, never schemas: a `$ref`-shaped value there stays as it is. */
const DATA = new Set(['const', 'default', 'enum', 'example', 'examples'])

/**
 * Replace every inlined copy of a named schema by a `$ref` to `components.schemas`. @fastify/swagger
 * lists the schemas added with `addSchema` there, but still inlines them wherever a route schema
 * embeds one (it writes a reference only for a route's own `$ref`), so the content-block union
 * would appear a dozen times and a generated client would name none of it. A copy is a subtree
 * equal to the component (keys in any order); the largest match wins, and components refer to each
 * other too. `names`: the components to reference (those the plugin added).
 */
export function referenceComponents(doc: Json, names: Iterable<string>): void {
  const schemas = doc.components.schemas as Json
  const byText = new Map<string, string>()
  // A cheap first look (description and key count) before a subtree is serialized.
  const shapes = new Set<string>()
  for (const name of names) {
    const schema = schemas[name] as Json
    byText.set(canonical(schema), name)
    shapes.add(shape(schema))
  }
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit)
    if (node === null || typeof node !== 'object') return node
    if (shapes.has(shape(node as Json))) {
      const name = byText.get(canonical(node))
      if (name !== undefined) return { $ref: `#/components/schemas/${name}` }
    }
    return children(node as Json)
  }
  const children = (node: Json): Json => Object.fromEntries(Object.entries(node).map(([k, v]) => [k, DATA.has(k) ? v : visit(v)]))
  // Components first (each from below its own root, which would otherwise match itself), then paths.
  const original = Object.entries(schemas)
  for (const [name, schema] of original) schemas[name] = children(schema as Json)
  doc.paths = visit(doc.paths)
}

function shape(node: Json): string {
  return `${String(node.description)}|${Object.keys(node).length}`
}

/** JSON text with object keys sorted, so equal schemas compare equal whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  const keys = Object.keys(value).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Json)[k])}`).join(',')}}`
}
