import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The compiled CLI (`npm test` builds first). */
export const cli = fileURLToPath(new URL('../dist/bin/mcp-http.js', import.meta.url))

/** Run the compiled CLI without a terminal: stdin closed, output captured. */
export function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [cli, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : (err as { code: number }).code, stdout, stderr })
    )
    child.stdin?.end()
  })
}
