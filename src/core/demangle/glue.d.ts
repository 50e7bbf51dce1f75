declare module 'gecko-profiler-demangle/index_bg.js' {
  export function __wbg_set_wasm(exports: WebAssembly.Exports): void;
  export function demangle_any(name: string): string;
}
