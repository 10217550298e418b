import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import puppeteer, { type Browser, type Page } from '../tools/puppeteer.js'
import { prerequisite } from './prerequisites.js'
import { reservePort } from './redis-server.js'

// The pages' tests (/docs, /console) in Debian's chromium, driven by puppeteer-core (which
// downloads no browser of its own).
const chromium = prerequisite('chromium')
const main = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url))

/** `npm start` on a free port: Host and Origin checks on (loopback HOST), the pages on by default. */
export async function startDemo(t: Test): Promise<number> {
  const { port, release } = await reservePort()
  await release()
  const child = spawn(process.execPath, [main], { env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent' }, stdio: 'ignore' })
  t.teardown(async () => {
    if (child.exitCode === null) await (child.kill('SIGTERM'), once(child, 'exit'))
  })
  for (let i = 0; i < 1200; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return port
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('the demo server did not start')
}

/** Chromium, closed when the test ends. */
export async function launch(t: Test): Promise<Browser> {
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, timeout: 120_000, args: ['--no-sandbox', '--disable-gpu'] })
  t.teardown(() => browser.close())
  return browser
}

export interface Watched {
  page: Page
  /** Script errors, console errors (policy violations among them), except those `allowed`. */
  problems: string[]
  /** Requests to any other origin than the server's. */
  foreign: string[]
  /** The statuses of the responses, by path. */
  statuses: Map<string, number[]>
}

/** A new page that collects its problems, foreign requests and response statuses. */
export async function watched(browser: Browser, origin: string, allowed?: RegExp): Promise<Watched> {
  const page = await browser.newPage()
  // Waits, not timing assertions: a busy machine may take long to render the page.
  page.setDefaultTimeout(120_000)
  const problems: string[] = []
  const foreign: string[] = []
  const statuses = new Map<string, number[]>()
  page.on('console', (message) => {
    if (message.type() === 'error' && (allowed === undefined || !allowed.test(message.text()))) problems.push(`console error: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`page error: ${(error as Error).message}`))
  page.on('request', (request) => {
    const url = request.url()
    // Inline images (data:) are part of the page; anything else must come from this server.
    if (!url.startsWith('data:') && new URL(url).origin !== origin) foreign.push(url)
  })
  page.on('response', (response) => {
    const path = new URL(response.url()).pathname
    statuses.set(path, [...(statuses.get(path) ?? []), response.status()])
  })
  return { page, problems, foreign, statuses }
}
