/** Each program the tests run, and the Debian package that installs it. */
export declare const PREREQUISITES: {
  readonly 'redis-server': 'redis-server'
  readonly 'redis-cli': 'redis-tools'
  readonly nginx: 'nginx'
  readonly tmux: 'tmux'
  readonly curl: 'curl'
  readonly jq: 'jq'
  readonly chromium: 'chromium'
  readonly callgrind_control: 'valgrind'
  readonly h2load: 'nghttp2-client'
}
/** The path of `name` on `path` (default: PATH) or in the sbin folders, or undefined. */
export declare function find(name: string, path?: string): string | undefined
/** The Debian packages of the programs not found, each once. */
export declare function missingPackages(programs?: Record<string, string>, path?: string): string[]
/** The command a person runs to install `packages`. */
export declare function installCommand(packages: string[]): string
/** Installs what is missing (root or passwordless sudo), or says what to run. Returns the exit code. */
export declare function ensure(programs?: Record<string, string>): number
