// info.ts — the INFO reply: "# Section" headers and "field:value" lines, for the sections asked.

/** Fields of one INFO section, in order. */
export type InfoFields = ReadonlyArray<readonly [name: string, value: string | number]>;

/** Renders the sections named in `asked` (lower case; none, "default", "all" or "everything" give
 *  every section). Unknown names are skipped, as Redis does. */
export function renderInfo(sections: ReadonlyMap<string, InfoFields>, asked: readonly string[]): string {
  const everything = asked.length === 0 || asked.some((a) => a === 'all' || a === 'everything' || a === 'default');
  const parts: string[] = [];
  for (const [name, fields] of sections) {
    if (!everything && !asked.includes(name)) continue;
    const title = name === 'pd3kv' ? 'PD3kv' : name[0]!.toUpperCase() + name.slice(1);
    parts.push(`# ${title}\r\n${fields.map(([k, v]) => `${k}:${v}\r\n`).join('')}`);
  }
  return parts.join('\r\n');
}
