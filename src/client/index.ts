/**
 * The client side of the package, as `mcp-pure-http/client`: the Pure HTTP client, the official
 * SDK's transport over it, and the result types. Nothing here loads Fastify (test/client/client-entry.test.ts).
 */
export * from './client.js'
export { PureHttpTransport, type PureHttpTransportOptions, type JsonRpcMessage } from './sdk-transport.js'
