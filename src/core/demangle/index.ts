// C++ (Itanium) and Rust (legacy and v0) demangling through gecko-profiler-demangle, the Firefox profiler's
// WASM build of the cpp_demangle and rustc-demangle crates. Its package targets bundlers (it imports a .wasm
// module), so it is instantiated here by hand; everything else in ProbeLens calls only `demangle()`.
import * as glue from 'gecko-profiler-demangle/index_bg.js';
import { demanglerWasm } from './wasmBytes';

let ready = false;

function init(): void {
  const module = new WebAssembly.Module(demanglerWasm());
  // eslint-disable-next-line probelens/name-records -- the module's import object, read by WebAssembly, keys fixed here
  const instance = new WebAssembly.Instance(module, { './index_bg.js': glue as unknown as WebAssembly.ModuleImports });
  glue.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as (() => void) | undefined)?.();
  ready = true;
}

/** Demangled name, or the input unchanged when it is not a mangled C++ or Rust symbol. */
export function demangle(name: string): string {
  if (!/^(_Z|_R|__Z|ZN)/.test(name)) return name;
  if (!ready) init();
  try {
    const out = glue.demangle_any(name);
    // Its fallbacks strip a Mach-O style leading underscore from names that are not mangled at all.
    return /[:(<]/.test(out) ? out : name;
  } catch {
    return name;
  }
}

/** Rust legacy symbols end in a `::h<16 hex>` hash that only adds noise to a function list. */
export function withoutRustHash(name: string): string {
  return name.replace(/::h[0-9a-f]{16}$/, '');
}
