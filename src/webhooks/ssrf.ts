import { BlockList, isIP, type LookupFunction } from 'node:net'
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'

// Each rule is a named list, checked in order: the first that holds names the refusal. BlockList
// also matches IPv4-mapped IPv6 (::ffff:127.0.0.1, ::ffff:7f00:1) against the IPv4 subnets.
const RULES: [string, [string, number, 'ipv4' | 'ipv6'][]][] = [
  ['cloud metadata', [['169.254.169.254', 32, 'ipv4'], ['100.100.100.200', 32, 'ipv4'], ['168.63.129.16', 32, 'ipv4'], ['fd00:ec2::254', 128, 'ipv6']]],
  ['unspecified', [['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']]],
  ['loopback', [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]],
  ['private', [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['fc00::', 7, 'ipv6'], ['fec0::', 10, 'ipv6'], ['64:ff9b:1::', 48, 'ipv6']]],
  ['link-local', [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]],
  ['CGNAT', [['100.64.0.0', 10, 'ipv4']]],
  ['multicast', [['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']]],
  ['reserved', [['240.0.0.0', 4, 'ipv4'], ['192.0.0.0', 24, 'ipv4'], ['198.18.0.0', 15, 'ipv4'], ['100::', 64, 'ipv6'], ['2001:db8::', 32, 'ipv6']]]
]
const LISTS: [string, BlockList][] = RULES.map(([name, nets]) => {
  const list = new BlockList()
  for (const [net, prefix, type] of nets) list.addSubnet(net, prefix, type)
  return [name, list]
})

/** The IPv4 address a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) IPv6 address carries, if any. */
function embeddedV4(ip: string): string | undefined {
  const groups = expand(ip)
  const hex = (a: number, b: number) => [a >> 8, a & 255, b >> 8, b & 255].join('.')
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return hex(groups[6]!, groups[7]!)
  if (groups[0] === 0x2002) return hex(groups[1]!, groups[2]!)
  return undefined
}

function expand(ip: string): number[] {
  // A dotted tail (::ffff:1.2.3.4) is two groups; '::' stands for as many zero groups as are missing.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip)
  const text = v4 === null ? ip : ip.slice(0, v4.index) + [(+v4[1]! << 8) | +v4[2]!, (+v4[3]! << 8) | +v4[4]!].map((n) => n.toString(16)).join(':')
  const [head, tail] = text.split('::') as [string, string | undefined]
  const parse = (s: string | undefined) => (s === undefined || s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)))
  const h = parse(head)
  const t = parse(tail)
  return tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t]
}

/** The rule an IP address breaks (`'loopback'`, `'private'`, ...), or undefined for a public address. */
export function refusedAddress(ip: string): string | undefined {
  const type = isIP(ip) === 6 ? 'ipv6' : 'ipv4'
  for (const [name, list] of LISTS) if (list.check(ip, type)) return name
  if (type === 'ipv6') {
    const v4 = embeddedV4(ip)
    if (v4 !== undefined) return refusedAddress(v4)
  }
  return undefined
}

/** `MCP_WEBHOOK_ALLOWED_HOSTS` entries: `host` or `host:port` (lower case; IPv6 in brackets). */
export function isAllowedHost(url: URL, allowed: readonly string[]): boolean {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80'
  const host = url.hostname.toLowerCase()
  return allowed.includes(host) || allowed.includes(`${host}:${port}`)
}

/** A URL a webhook may not use, with the rule it breaks. */
export class RefusedTarget extends Error {}

/**
 * Parse and check a webhook URL: https (http only for an allowed host), no credentials, and a host
 * that is not a refused IP literal. Resolves the host's name when it is not an IP literal.
 */
export function checkUrl(raw: string, allowed: readonly string[]): { url: URL; allowed: boolean; name: string | undefined } {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new RefusedTarget('The webhook URL is not an absolute URL')
  }
  const listed = isAllowedHost(url, allowed)
  if (url.protocol !== 'https:' && !(listed && url.protocol === 'http:')) throw new RefusedTarget('The webhook URL must use https')
  if (url.username !== '' || url.password !== '') throw new RefusedTarget('The webhook URL must not carry credentials')
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (listed) return { url, allowed: true, name: undefined }
  if (isIP(host) !== 0) {
    const rule = refusedAddress(host)
    if (rule !== undefined) throw new RefusedTarget(`The webhook URL's address ${host} is ${rule}: refused`)
    return { url, allowed: false, name: undefined }
  }
  return { url, allowed: false, name: host }
}

/** A resolver with the shape of `dns.lookup` (every address), so tests can stand in for DNS. */
export type Resolve = (name: string, options: { all: true }, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void

/** Resolve a name (every address) and refuse it when any address breaks a rule. */
export async function checkName(name: string, resolveName: Resolve = dnsLookup): Promise<void> {
  const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
    resolveName(name, { all: true }, (err, found) => (err === null ? resolve(found) : reject(new RefusedTarget(`The webhook host ${name} does not resolve`))))
  )
  for (const a of addresses) {
    const rule = refusedAddress(a.address)
    if (rule !== undefined) throw new RefusedTarget(`The webhook host ${name} resolves to ${a.address}, which is ${rule}: refused`)
  }
}

/**
 * `connect.lookup` for the delivery agent: resolve, then refuse the connection when any address
 * breaks a rule. The socket connects to the address checked here, so a name that resolves
 * differently at delivery than at registration (DNS rebinding) is still refused.
 */
export function guardLookup(resolveName: Resolve = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolveName(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, '', 0)
      for (const a of addresses) {
        const rule = refusedAddress(a.address)
        if (rule !== undefined) return callback(new RefusedTarget(`${hostname} resolves to ${a.address}, which is ${rule}: refused`), '', 0)
      }
      if (options.all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses)
      callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

/** {@link guardLookup} over the system resolver. */
export const guardedLookup = guardLookup()
