import { accessSync, constants } from 'node:fs'
import { delimiter, join, resolve } from 'node:path'

const canRun = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

// util-linux's setpriv: Linux only, and on every Debian and Ubuntu (util-linux is an essential package).
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find(canRun)

/** Where a command would be found: a path (relative to `cwd`) as it is, a bare name on `PATH`. */
function located(command: string, path: string | undefined, cwd: string): string | undefined {
  if (command.includes('/')) return canRun(resolve(cwd, command)) ? command : undefined
  return (path ?? '').split(delimiter).filter((dir) => dir !== '').map((dir) => join(dir, command)).find(canRun)
}

/**
 * A stdio upstream's command, as spawned so that it ends with the gateway however the gateway ends:
 * through `setpriv --pdeathsig TERM`, which has the kernel send the child SIGTERM when the gateway's
 * process dies (a crash, SIGKILL, the OOM killer), where only a clean stop ended it before (the
 * SDK's close: SIGTERM, then SIGKILL) and a killed gateway left it running, an orphan. setpriv
 * execs the command, so the child keeps its process id. Without setpriv (not Linux), or for a
 * command that is not there (whose ENOENT is then Node's own, said at once), the command as given.
 */
export function boundToUs(command: string, args: readonly string[], env: Record<string, string>, cwd: string | undefined): { command: string; args: string[] } {
  if (SETPRIV === undefined || located(command, env.PATH, cwd ?? process.cwd()) === undefined) return { command, args: [...args] }
  return { command: SETPRIV, args: ['--pdeathsig', 'TERM', '--', command, ...args] }
}
