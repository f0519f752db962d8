/** Types of scripts/ts-cache.mjs (plain JavaScript, so that loading it starts no TypeScript stripper). */
export declare const TS_CACHE_DIR: string;
export declare const TS_CACHE_HOOK: string;
export declare function cacheFileOf(source: string, dir?: string): string;
export declare function strippedSource(source: string, dir?: string): string;
export declare function warmTsCache(dir?: string): number;
