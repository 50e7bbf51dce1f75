// Host names a user can pick from their ssh config: `Host` entries without patterns (`*`, `?`, `!`).
export function sshConfigHosts(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const m = /^\s*Host\s*(?:=\s*|\s)(.*)$/i.exec(raw.replace(/#.*$/, ''));
    if (!m) continue;
    for (const h of m[1].trim().split(/\s+/)) {
      if (h && !/[*?!]/.test(h) && !out.includes(h)) out.push(h);
    }
  }
  return out;
}
