/** The tools' package: test/tools/ (its package.json and package-lock.json). */
export declare const TOOLS: string
/** Whether `dir`'s node_modules holds what its lock says. */
export declare function installed(dir?: string): boolean
/** Installs the tools with `npm ci` when missing or stale. Returns the exit code. */
export declare function ensureTools(dir?: string, npm?: string): number
