/**
 * The parts of the official SDK the gateway uses. `@modelcontextprotocol/sdk` is an optional peer
 * dependency of this package: it is imported here, on first use, so that a library user who never
 * runs the gateway does not need it installed.
 */
export interface Sdk {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client
  getDefaultEnvironment: typeof import('@modelcontextprotocol/sdk/client/stdio.js').getDefaultEnvironment
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport
  SSEClientTransport: typeof import('@modelcontextprotocol/sdk/client/sse.js').SSEClientTransport
  SseError: typeof import('@modelcontextprotocol/sdk/client/sse.js').SseError
  types: typeof import('@modelcontextprotocol/sdk/types.js')
}

let loading: Promise<Sdk> | undefined

/**
 * Load the SDK once. Without it installed, Node's own error says so ("Cannot find package
 * '@modelcontextprotocol/sdk'"), and the gateway stops at start.
 */
export function loadSdk(): Promise<Sdk> {
  loading ??= (async () => {
    const [client, stdio, http, sse, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/client/sse.js'),
      import('@modelcontextprotocol/sdk/types.js')
    ])
    return {
      Client: client.Client,
      getDefaultEnvironment: stdio.getDefaultEnvironment,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      SSEClientTransport: sse.SSEClientTransport,
      SseError: sse.SseError,
      types
    }
  })()
  return loading
}
