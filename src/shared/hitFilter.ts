// The live panel's filter language, shared so the host's export writes exactly the rows the webview shows.
//   free words        every word must occur (case-insensitive) in probe, host, comm, arguments or return value
//   probe:NAME        probe name contains NAME      host:NAME   host contains NAME      comm:NAME   comm contains NAME
//   pid:N  tid:N      exact thread-group / thread id             kind:entry|return|line|usdt
//   site:ADDR         the hit came from the site at that address (exactly), or site:KIND (entry|clone|part|inlined)
// Side-effect free.

export interface HitFields {
  probe: string;
  host: string;
  comm: string;
  kind: string;
  pid: number;
  tid: number;
  /** arguments as the panel shows them ("a=3 b=-7") */
  argText: string;
  retText: string;
  /** the address ("0x…") of the site the hit came from, '' when it names none */
  site: string;
  /** that site's kind, '' when none */
  siteKind: string;
}

export interface HitFilter {
  readonly empty: boolean;
  matches(h: HitFields): boolean;
}

const FIELD_TOKENS = ['probe', 'host', 'comm', 'kind', 'pid', 'tid', 'site'] as const;
type FieldToken = (typeof FIELD_TOKENS)[number];

export function parseFilter(text: string): HitFilter {
  const words: string[] = [];
  const fields: { field: FieldToken; value: string }[] = [];
  for (const tok of text.trim().split(/\s+/)) {
    if (!tok) continue;
    const colon = tok.indexOf(':');
    const field = colon > 0 ? tok.slice(0, colon).toLowerCase() : '';
    if ((FIELD_TOKENS as readonly string[]).includes(field) && colon < tok.length - 1) {
      fields.push({ field: field as FieldToken, value: tok.slice(colon + 1).toLowerCase() });
    } else {
      words.push(tok.toLowerCase());
    }
  }
  if (words.length === 0 && fields.length === 0) return { empty: true, matches: () => true };
  return {
    empty: false,
    matches(h: HitFields): boolean {
      for (const { field, value } of fields) {
        switch (field) {
          case 'pid':
          case 'tid':
            if (String(h[field]) !== value) return false;
            break;
          case 'kind':
            if (h.kind !== value) return false;
            break;
          // Exact: 0x40 must not pick out every site whose address begins with it.
          case 'site':
            if (h.site.toLowerCase() !== value && h.siteKind !== value) return false;
            break;
          default:
            if (!h[field].toLowerCase().includes(value)) return false;
        }
      }
      if (words.length === 0) return true;
      const hay = `${h.probe}\n${h.host}\n${h.comm}\n${h.argText}\n${h.retText}`.toLowerCase();
      return words.every((w) => hay.includes(w));
    },
  };
}
