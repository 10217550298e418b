import { BlockList, isIP, type LookupFunction } from 'node:net'
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'

// The blocks of the IANA IPv4 and IPv6 Special-Purpose Address Registries that are not globally
// reachable, with multicast, the deprecated site-local block and the cloud metadata addresses. Each
// rule is a named list, checked in order: the first that holds names the refusal. IPv4 and IPv6 are
// separate lists, each checked with its own family only: BlockList would match an IPv4-mapped
// address against IPv4 subnets by itself, and the embedded forms are decoded below instead, all
// of them alike. A whole block is refused where it holds a few global addresses (anycast of
// 192.0.0.0/24 and 2001::/23): none of them is a webhook receiver.
const V4: [string, [string, number][]][] = [
  ['cloud metadata', [['169.254.169.254', 32], ['100.100.100.200', 32], ['168.63.129.16', 32]]],
  ['unspecified', [['0.0.0.0', 8]]],
  ['loopback', [['127.0.0.0', 8]]],
  ['private', [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]]],
  ['link-local', [['169.254.0.0', 16]]],
  ['CGNAT', [['100.64.0.0', 10]]],
  ['multicast', [['224.0.0.0', 4]]],
  ['documentation', [['192.0.2.0', 24], ['198.51.100.0', 24], ['203.0.113.0', 24]]],
  ['benchmarking', [['198.18.0.0', 15]]],
  ['broadcast', [['255.255.255.255', 32]]],
  // IETF protocol assignments, the deprecated 6to4 relay anycast, and the class E space.
  ['reserved', [['192.0.0.0', 24], ['192.88.99.0', 24], ['240.0.0.0', 4]]]
]
const V6: [string, [string, number][]][] = [
  ['cloud metadata', [['fd00:ec2::254', 128]]],
  ['unspecified', [['::', 128]]],
  ['loopback', [['::1', 128]]],
  // Unique local, and local-use NAT64, which translates to whatever IPv4 network its operator has.
  ['private', [['fc00::', 7], ['64:ff9b:1::', 48]]],
  ['link-local', [['fe80::', 10]]],
  ['site-local', [['fec0::', 10]]],
  ['multicast', [['ff00::', 8]]],
  ['documentation', [['2001:db8::', 32], ['3fff::', 20]]],
  ['benchmarking', [['2001:2::', 48]]],
  // A Teredo address is a tunnel to an IPv4 client whose address is hidden in it (XORed) behind a
  // server's: the IPv4 host it reaches is not worth decoding to allow; no receiver needs Teredo.
  ['Teredo', [['2001::', 32]]],
  // Discard-only, and the IETF protocol assignments (ORCHID and the rest).
  ['reserved', [['100::', 64], ['2001::', 23]]]
]
const list = (family: 'ipv4' | 'ipv6') => ([name, nets]: [string, [string, number][]]): [string, BlockList] => {
  const blocks = new BlockList()
  for (const [net, prefix] of nets) blocks.addSubnet(net, prefix, family)
  return [name, blocks]
}
const V4_LISTS = V4.map(list('ipv4'))
const V6_LISTS = V6.map(list('ipv6'))

const zero = (g: number[], from: number, to: number) => g.slice(from, to).every((x) => x === 0)

// The IPv6 forms that carry an IPv4 address (RFC 4291, 2765, 6052, 3056): its name, whether an
// address (its eight groups) has it, the group where the IPv4 address starts, and whether a public
// one is reached through it. Through each, a connection may reach that IPv4 address (a dual-stack
// socket, a translator, a tunnel): the IPv4 rules decide. The two deprecated forms are refused
// even with a public address: nothing legitimate uses them, and a host may still route them.
const EMBEDDED: [string, (g: number[]) => boolean, number, boolean][] = [
  ['IPv4-mapped', (g) => zero(g, 0, 5) && g[5] === 0xffff, 6, true], // ::ffff:0:0/96
  ['IPv4-compatible', (g) => zero(g, 0, 6), 6, false], // ::/96
  ['SIIT', (g) => zero(g, 0, 4) && g[4] === 0xffff && g[5] === 0, 6, false], // ::ffff:0:0:0/96
  ['NAT64', (g) => g[0] === 0x64 && g[1] === 0xff9b && zero(g, 2, 6), 6, true], // 64:ff9b::/96
  ['6to4', (g) => g[0] === 0x2002, 1, true] // 2002::/16: bits 16-48
]

/** The eight 16-bit groups of an IPv6 address (one that isIP accepts, without its zone). */
function groups(ip: string): number[] {
  // A dotted tail (::ffff:1.2.3.4) is two groups; '::' stands for as many zero groups as are missing.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip)
  const text = v4 === null ? ip : ip.slice(0, v4.index) + [(+v4[1]! << 8) | +v4[2]!, (+v4[3]! << 8) | +v4[4]!].map((n) => n.toString(16)).join(':')
  const [head, tail] = text.split('::') as [string, string | undefined]
  const parse = (s: string | undefined) => (s === undefined || s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)))
  const h = parse(head)
  const t = parse(tail)
  return tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t]
}

const ruleOf = (lists: [string, BlockList][], ip: string, family: 'ipv4' | 'ipv6') => lists.find(([, blocks]) => blocks.check(ip, family))?.[0]

/**
 * The rule an IP address breaks (`'loopback'`, `'private'`, `'loopback (IPv4-compatible 127.0.0.1)'`,
 * ...), or undefined for a public address. IPv6 is allowed only in global unicast (2000::/3), or as a
 * form that carries a public IPv4 address and reaches it (IPv4-mapped, NAT64, 6to4).
 */
export function refusedAddress(ip: string): string | undefined {
  if (isIP(ip) === 4) return ruleOf(V4_LISTS, ip, 'ipv4')
  const bare = ip.replace(/%.*$/, '')
  const named = ruleOf(V6_LISTS, bare, 'ipv6')
  if (named !== undefined) return named
  const g = groups(bare)
  const carrier = EMBEDDED.find(([, has]) => has(g))
  if (carrier !== undefined) {
    const [form, , at, reaches] = carrier
    const v4 = [g[at]! >> 8, g[at]! & 255, g[at + 1]! >> 8, g[at + 1]! & 255].join('.')
    const rule = ruleOf(V4_LISTS, v4, 'ipv4') ?? (reaches ? undefined : 'deprecated')
    return rule === undefined ? undefined : `${rule} (${form} ${v4})`
  }
  // Nothing outside 2000::/3 is global unicast: that refuses what the lists do not name (SRv6
  // 5f00::/16, the dummy prefix 100:0:0:1::/64, unassigned space), and whatever IANA sets aside next.
  return (g[0]! & 0xe000) === 0x2000 ? undefined : 'not global unicast'
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
