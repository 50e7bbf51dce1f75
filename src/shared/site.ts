// The one shape of a site, from the index to the panel: which copy of a function's code a probe point (and so each
// of its hits) sits on. The index keeps addresses as bigints (FunctionSite), everything after the compiler as
// "0x…" text (Site). Also the names that tie an entry to its returns: the pair key and the goroutine argument.
// Side-effect free and free of Node and VS Code imports: the webview bundle imports it too.

/**
 * Where a call of a function can begin, or where its code lives: `entry` the out-of-line function (its symbol's
 * address), `clone` a specialised copy (`.isra`, `.constprop`), `part` the split-off body of a partially
 * inlined function (`.part.N`, entered only through the function's own entry or an inlined copy of its head),
 * `inlined` a DW_TAG_inlined_subroutine copy inside a caller. `.cold` blocks are never sites.
 */
export type SiteKind = 'entry' | 'clone' | 'part' | 'inlined';

/** Every kind, in rank order (the entry first): sites are listed, and a copy's several names chosen, in this order. */
export const SITE_KINDS: readonly SiteKind[] = ['entry', 'clone', 'part', 'inlined'];

/** A kind's place in SITE_KINDS: compare two kinds by it. */
export function siteRank(kind: SiteKind): number {
  return SITE_KINDS.indexOf(kind);
}

/** Which copy of a function's code a probe point sits on (a function can have several: clones, parts, inlined copies). */
export interface Site {
  kind: SiteKind;
  /** "0x…" */
  address: string;
  /** the function the code is inlined into, or a part's parent */
  caller?: string;
  file?: string;
  line?: number;
}

/** "0x…", the text form of an address in a Site. */
export const siteAddress = (a: bigint): string => `0x${a.toString(16)}`;

/** The Site of an indexed copy (bigint address). */
export function toSite(s: { kind: SiteKind; address: bigint; caller?: string; file?: string; line?: number }): Site {
  const out: Site = { kind: s.kind, address: siteAddress(s.address) };
  if (s.caller !== undefined) out.caller = s.caller;
  if (s.file !== undefined) out.file = s.file;
  if (s.line !== undefined) out.line = s.line;
  return out;
}

/** Identifies a site among one probe's sites (a kind and an address). */
export function siteKey(s: Pick<Site, 'kind' | 'address'>): string {
  return `${s.kind}\0${s.address}`;
}

/**
 * The hidden argument that pairs a Go function's entries with its returns: the current goroutine (`g`, in R14 on
 * amd64), since goroutines migrate between threads.
 */
export const GOROUTINE_ARG = 'probelens_g';

/** What an entry and its returns share: one function's calls through one site pair with each other. */
export function pairKey(fn: string, siteAddr: bigint | undefined): string {
  return `${fn}@${siteAddr}`;
}
