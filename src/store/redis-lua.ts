/**
 * What a script may start with (see `redis-scripts.ts`): the common arguments, Redis' clock, and
 * the names derived from `KEYS[1]`, dependencies first. Redis runs a script's definitions on every
 * call (a closure made, a string cut), so {@link lua} keeps only those the script names.
 */
const PRELUDE: readonly (readonly [name: string, lua: string])[] = [
  ['P', 'local P = ARGV[1]'],
  ['CONN_TTL', 'local CONN_TTL = tonumber(ARGV[2])'],
  ['MAX_CONNS', 'local MAX_CONNS = tonumber(ARGV[3])'],
  ['PUB', 'local PUB = ARGV[4]'],
  ['K', 'local K = KEYS[1]'],
  ['A', 'local function A(i) return ARGV[i + 4] end'],
  [
    'nowms',
    `local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`
  ],
  // The hash tag of K with its braces ("{h}" of "P c:{h}"): names built on it share K's slot.
  ['TAG', 'local TAG = string.sub(K, #P + 3)'],
  // Wake whoever waits for `name` on the tag's shard channel, on any instance.
  ['wake', "local function wake(name) redis.call(PUB, P .. 'w:' .. TAG, name) end"]
]

/**
 * A script: the prelude definitions `body` uses (and theirs), then `body`. `A(n)` with a literal n
 * (the n-th argument after the common four) is written as `ARGV[n + 4]`: no call per argument read.
 */
export const lua = (body: string): string => {
  const text = body.replace(/\bA\((\d+)\)/g, (_, n: string) => `ARGV[${Number(n) + 4}]`)
  let scanned = text
  const kept: string[] = []
  for (let i = PRELUDE.length - 1; i >= 0; i--) {
    const [name, definition] = PRELUDE[i]!
    // A function is used where it is called (a comment may say "A ..."), a value wherever it is named.
    if (!new RegExp(definition.startsWith('local function') ? `\\b${name}\\(` : `\\b${name}\\b`).test(scanned)) continue
    kept.unshift(definition)
    scanned += definition
  }
  return `${kept.join('\n')}\n${text}`
}

/**
 * A connection's keys other than its notification queue (which has its own TTL) live `CONN_TTL`
 * past its last use. For scripts whose K is a connection's hash `P c:{h}`.
 */
export const KEEPALIVE = `
local function keepalive()
  for _, k in ipairs({ K, K .. ':subs', K .. ':rq', K .. ':rm', K .. ':rs' }) do redis.call('PEXPIRE', k, CONN_TTL) end
end
`
