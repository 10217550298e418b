/**
 * The parts of the official SDK the gateway uses. `@modelcontextprotocol/sdk` is an optional peer
 * dependency of this package: it is imported here, on first use, so that a library user who never
 * runs the gateway does not need it installed.
 */
export interface Sdk {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport
  getDefaultEnvironment: typeof import('@modelcontextprotocol/sdk/client/stdio.js').getDefaultEnvironment
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport
  types: typeof import('@modelcontextprotocol/sdk/types.js')
}

let loading: Promise<Sdk> | undefined

/**
 * Load the SDK once. Without it installed, Node's own error says so ("Cannot find package
 * '@modelcontextprotocol/sdk'"), and the gateway stops at start.
 */
export function loadSdk(): Promise<Sdk> {
  loading ??= (async () => {
    const [client, stdio, http, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js')
    ])
    return {
      Client: client.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      getDefaultEnvironment: stdio.getDefaultEnvironment,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      types
    }
  })()
  return loading
}
