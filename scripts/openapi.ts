import { mkdir, writeFile } from 'node:fs/promises'
import { generateOpenApi } from './openapi-lib.js'

// `npm run openapi` runs this compiled, from dist/scripts/: the repository root is two levels up.
const dir = new URL('../../openapi/', import.meta.url)

await mkdir(dir, { recursive: true })
for (const [name, text] of Object.entries(await generateOpenApi())) {
  await writeFile(new URL(name, dir), text)
  console.log(`wrote openapi/${name}`)
}
