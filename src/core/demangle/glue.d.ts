// The two functions of gecko-profiler-demangle's wasm-bindgen glue that ./index.ts uses; the package ships no types.
// Tests: test/unit/core/demangle/index.test.ts
declare module 'gecko-profiler-demangle/index_bg.js' {
  export function __wbg_set_wasm(exports: WebAssembly.Exports): void;
  export function demangle_any(name: string): string;
}
