import { CONNECTION_SCRIPTS } from './redis-scripts-connections.js'
import { MAILBOX_SCRIPTS } from './redis-scripts-mailbox.js'
import { REGISTRY_SCRIPTS } from './redis-scripts-registry.js'
import { TASK_SCRIPTS } from './redis-scripts-tasks.js'

/**
 * The Lua scripts of {@link RedisStore}: each runs atomically inside Redis, so that a request is
 * handed to one poller once, an ack removes exactly its group, an answer completes a request once,
 * a terminal task stays terminal, and the bounds hold across instances.
 *
 * Slots: every script is called with one key, `KEYS[1]`, and touches only keys (and shard channels)
 * with that key's hash tag, so that each runs on one Redis Cluster slot:
 * - a logical connection's keys `P c:{h}...` and its answers `P a:{h}:<id>` (h = SHA-1 of the owner,
 *   so that no owner id can spell another owner's key; scripts in `redis-scripts-connections.ts` and
 *   `redis-scripts-mailbox.ts`);
 * - one task `P t:{h:<taskId>}`, one idempotency record `P i:{h:<requestId>}` (`redis-scripts-tasks.ts`);
 * - the registry `P {g}:...`: the connections in use (least recently used first), sessions, and the
 *   indexes that bound tasks and idempotency records over all owners (`redis-scripts-registry.ts`).
 * An operation that spans two of these runs one script on each, in an order that leaves nothing
 * unbounded if the second never runs (everything expires by itself).
 *
 * Every script may name the store's configuration: `P` the key prefix, `CONN_TTL` the connection
 * TTL (ms), `MAX_CONNS` the most connections kept and `PUB` the publish command (`PUBLISH`, or
 * `SPUBLISH` on a cluster). A store writes them into its copy of each script (`configure` in
 * `redis-lua.ts`) rather than sending them with every call; a script's arguments are its own
 * (`A(1)` is the first). Time is Redis' own clock.
 */
export const SCRIPTS = { ...REGISTRY_SCRIPTS, ...CONNECTION_SCRIPTS, ...MAILBOX_SCRIPTS, ...TASK_SCRIPTS } as const

export type ScriptName = keyof typeof SCRIPTS
