// puppeteer-core from the test tools (test/tools/package.json, installed by scripts/test-tools.mjs).
export { default } from 'puppeteer-core'
export type { Browser, HTTPRequest, Page } from 'puppeteer-core'
