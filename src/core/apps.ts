/**
 * MCP Apps (SEP-1865, the `io.modelcontextprotocol/ui` extension): a tool names an HTML view, a
 * `ui://` resource of MIME type `text/html;profile=mcp-app`, in its `_meta.ui.resourceUri`; the host
 * reads the resource and shows it in a sandboxed frame. What a registration declares is checked here,
 * once, so that a typo in a CSP origin is a start-up error rather than a view a host silently breaks.
 */
import { ConfigurationError } from '../errors.js'
import type { Meta } from '../schema/common.js'

/** The extension's identifier, under `capabilities.extensions`. */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui'
/** The one MIME type SEP-1865 defines for a view. */
export const UI_MIME_TYPE = 'text/html;profile=mcp-app'

/** Origins a view may use, each mapped by the host to CSP directives (SEP-1865 `McpUiResourceCsp`). */
export interface UiCsp {
  /** fetch/XHR/WebSocket: `connect-src`. */
  connectDomains?: string[]
  /** Scripts, styles, images, fonts, media: `script-src`, `style-src`, `img-src`, `font-src`, `media-src`. */
  resourceDomains?: string[]
  /** Nested frames: `frame-src`. */
  frameDomains?: string[]
  /** `base-uri`. */
  baseUriDomains?: string[]
}

/** Browser features a view asks for (the host may grant them in the frame's `allow`). */
export interface UiPermissions {
  camera?: Record<string, never>
  microphone?: Record<string, never>
  geolocation?: Record<string, never>
  clipboardWrite?: Record<string, never>
}

/** A view's `_meta.ui` (SEP-1865 `UIResourceMeta`). */
export interface UiResourceMeta {
  csp?: UiCsp
  permissions?: UiPermissions
  /** A dedicated sandbox origin; its format is the host's business. */
  domain?: string
  /** Whether the host should draw a border and background around the view. */
  prefersBorder?: boolean
}

/** A tool's `_meta.ui` (SEP-1865 `McpUiToolMeta`). */
export interface UiToolMeta {
  /** The `ui://` resource that renders this tool's results. */
  resourceUri: string
  /** Who may call the tool: the model, the view (`app`), or both (the default). */
  visibility?: Array<'model' | 'app'>
}

const CSP_KEYS = ['connectDomains', 'resourceDomains', 'frameDomains', 'baseUriDomains'] as const
const PERMISSIONS = ['camera', 'microphone', 'geolocation', 'clipboardWrite'] as const
/**
 * An origin as a CSP source: scheme, host (optionally `*.` for subdomains) and port, no path. No
 * keywords (`'unsafe-eval'`, `*`, `data:`): a server names where its view goes, never loosens the
 * host's policy, and nothing that could end a directive (`;`, spaces, quotes) gets through.
 */
const ORIGIN = /^(https?|wss?):\/\/(\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::\d{1,5})?$/

/** Whether `value` is an origin a view's CSP may name (see {@link checkUiResourceMeta}). */
export function isCspOrigin(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 255 && ORIGIN.test(value)
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Check a `ui://` URI: the scheme SEP-1865 reserves for views, and something after it. */
export function assertUiUri(owner: string, uri: unknown): asserts uri is string {
  if (typeof uri !== 'string' || !/^ui:\/\/[^\s]+$/.test(uri)) {
    throw new ConfigurationError(`${owner}: a view's URI must start with "ui://" (got ${JSON.stringify(uri)})`)
  }
}

/** Check a view's `_meta.ui`, throwing a {@link ConfigurationError} that names the bad field. */
export function checkUiResourceMeta(owner: string, ui: UiResourceMeta): UiResourceMeta {
  if (!isObject(ui)) throw new ConfigurationError(`${owner}: ui must be an object`)
  const known = new Set(['csp', 'permissions', 'domain', 'prefersBorder'])
  const unknown = Object.keys(ui).find((k) => !known.has(k))
  if (unknown !== undefined) throw new ConfigurationError(`${owner}: ui.${unknown} is not a SEP-1865 field (csp, permissions, domain, prefersBorder)`)
  if (ui.csp !== undefined) {
    if (!isObject(ui.csp)) throw new ConfigurationError(`${owner}: ui.csp must be an object`)
    for (const [key, list] of Object.entries(ui.csp)) {
      if (!(CSP_KEYS as readonly string[]).includes(key)) throw new ConfigurationError(`${owner}: ui.csp.${key} is not one of ${CSP_KEYS.join(', ')}`)
      if (!Array.isArray(list)) throw new ConfigurationError(`${owner}: ui.csp.${key} must be an array of origins`)
      const bad = list.find((o) => !isCspOrigin(o))
      if (bad !== undefined) {
        throw new ConfigurationError(`${owner}: ui.csp.${key} has ${JSON.stringify(bad)}, not an origin such as "https://api.example.com" or "https://*.example.com"`)
      }
    }
  }
  if (ui.permissions !== undefined) {
    if (!isObject(ui.permissions)) throw new ConfigurationError(`${owner}: ui.permissions must be an object`)
    for (const [key, value] of Object.entries(ui.permissions)) {
      if (!(PERMISSIONS as readonly string[]).includes(key)) throw new ConfigurationError(`${owner}: ui.permissions.${key} is not one of ${PERMISSIONS.join(', ')}`)
      if (!isObject(value)) throw new ConfigurationError(`${owner}: ui.permissions.${key} must be {}`)
    }
  }
  if (ui.domain !== undefined && (typeof ui.domain !== 'string' || !/^[^\s]{1,253}$/.test(ui.domain))) {
    throw new ConfigurationError(`${owner}: ui.domain must be a host name`)
  }
  if (ui.prefersBorder !== undefined && typeof ui.prefersBorder !== 'boolean') throw new ConfigurationError(`${owner}: ui.prefersBorder must be a boolean`)
  return structuredClone(ui)
}

/**
 * A tool's `_meta` with its view linked: `ui` checked and set in `_meta.ui` (beside any other
 * `_meta.ui` fields and every other `_meta` key, which stay as they were).
 */
export function linkToolUi(owner: string, meta: Meta | undefined, ui: UiToolMeta, hasResource: (uri: string) => boolean): Meta {
  if (!isObject(ui)) throw new ConfigurationError(`${owner}: ui must be an object`)
  assertUiUri(owner, ui.resourceUri)
  if (!hasResource(ui.resourceUri)) {
    throw new ConfigurationError(`${owner}: its view "${ui.resourceUri}" is not registered; register the view (mcp.uiResource) before the tool`)
  }
  if (ui.visibility !== undefined) {
    const v = ui.visibility as unknown[]
    if (!Array.isArray(v) || v.length === 0 || v.some((x) => x !== 'model' && x !== 'app') || new Set(v).size !== v.length) {
      throw new ConfigurationError(`${owner}: ui.visibility must be a non-empty array of "model" and "app"`)
    }
  }
  const before = isObject(meta?.ui) ? meta.ui : {}
  const linked: Record<string, unknown> = { ...before, resourceUri: ui.resourceUri }
  if (ui.visibility !== undefined) linked.visibility = [...ui.visibility]
  return { ...meta, ui: linked }
}
