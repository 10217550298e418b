import { freesMemory, lua } from './redis-lua.js'
import { PART } from './redis-keys.js'

/**
 * Scripts on one logical connection's slot (K is its hash `P c:{h}`): its fields and its resource
 * subscriptions. The per-URI subscriber sets live on the URI's own slot and are kept by the caller.
 */
export const CONNECTION_SCRIPTS = {
  /** K connection: drop everything it holds; returns its subscriptions (to leave their URI sets). */
  mcpForget: freesMemory(
    lua(`
local subs = redis.call('SMEMBERS', K .. '${PART.subs}')
redis.call('DEL', K, K .. '${PART.subs}', K .. '${PART.notifications}', K .. '${PART.requestOrder}', K .. '${PART.requestMessages}', K .. '${PART.requestStates}')
return subs
`)
  ),

  /** K connection, A(1) field, A(2) value: set a connection field (log level, legacy client). */
  mcpSetField: lua(`
redis.call('HSET', K, A(1), A(2))
keepalive()
`),

  /** K connection, A(1) uri, A(2) max subscriptions: 1 added, 0 already, -1 full. */
  mcpSubscribe: lua(`
keepalive()
local s = K .. '${PART.subs}'
if redis.call('SISMEMBER', s, A(1)) == 1 then return 0 end
if redis.call('SCARD', s) >= tonumber(A(2)) then return -1 end
redis.call('SADD', s, A(1))
redis.call('PEXPIRE', s, CONN_TTL)
return 1
`),

  /** K connection: its keys live CONN_TTL again; returns its subscriptions (whose URI sets the caller keeps too). */
  mcpKeepAlive: lua(`
keepalive()
return redis.call('SMEMBERS', K .. '${PART.subs}')
`),

  /** K URI subscriber set, A(1) owner, A(2) 1 to add (it lives CONN_TTL), 0 to remove. */
  mcpSubscriber: lua(`
if A(2) == '0' then return redis.call('SREM', K, A(1)) end
redis.call('SADD', K, A(1))
redis.call('PEXPIRE', K, CONN_TTL)
return 1
`)
} as const
