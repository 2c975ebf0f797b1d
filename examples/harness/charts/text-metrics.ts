// text-metrics.ts — text widths in DejaVu Sans for Vega's layout in Node, where it has no canvas
// to measure text (see the comment below), and the swap of Vega's measurer while a chart renders.
import * as vega from 'vega';

// Vega lays out titles, axes and legends from text widths; in Node it has no canvas to measure them
// and guesses 0.8 em a character, which leaves wide empty margins. Charts are drawn in DejaVu Sans
// (Debian's default, what rsvg-convert and most Linux viewers use; Arial and Helvetica are
// narrower), so widths come from its advance widths, in 1/1000 em (fontTools, from DejaVuSans.ttf
// and DejaVuSans-Bold.ttf 2.37): ASCII 32-126, then the characters in EXTRA_CHARS. Any other
// character counts as 1 em.
const EXTRA_CHARS = 'µ×–—…·°';
const DEJAVU_REGULAR = decodeWidths('318,401,460,838,636,950,780,275,390,390,500,838,318,361,318,337,636,636,636,636,636,636,636,636,636,636,337,337,838,838,838,531,1000,684,686,698,770,632,575,775,752,295,295,656,557,863,748,787,603,787,695,635,611,732,684,989,685,611,685,390,337,390,838,500,500,613,635,550,635,615,352,635,634,278,278,579,278,974,634,612,635,635,411,521,392,634,592,818,592,592,525,636,337,636,838,636,838,500,1000,1000,318,500');
const DEJAVU_BOLD = decodeWidths('348,456,521,838,696,1002,872,306,457,457,523,838,380,415,380,365,696,696,696,696,696,696,696,696,696,696,400,400,838,838,838,580,1000,774,762,734,830,683,683,821,837,372,372,775,637,995,837,850,733,850,770,720,682,812,774,1103,771,724,725,457,365,457,838,500,500,675,716,593,716,678,435,716,712,343,343,665,343,1042,712,687,716,716,493,595,478,712,652,924,645,652,582,712,365,712,838,736,838,500,1000,1000,380,500');

function decodeWidths(list: string): Map<string, number> {
  const chars = [...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)), ...EXTRA_CHARS];
  const widths = list.split(',').map(Number);
  if (widths.length !== chars.length) throw new Error('charts: width table does not match its characters');
  return new Map(chars.map((c, i) => [c, widths[i]!]));
}

/** Width in px of `text` in DejaVu Sans at `fontSize` px, 3% generous (no kerning counted). */
export function textWidth(text: string, fontSize: number, bold = false): number {
  const table = bold ? DEJAVU_BOLD : DEJAVU_REGULAR;
  let em = 0;
  for (const c of text) em += table.get(c) ?? 1000;
  return (em / 1000) * fontSize * 1.03;
}

/** What vega passes to a text measurer: a text item (font size and weight) and a line of text. */
interface TextItem {
  fontSize?: number | string | null;
  fontWeight?: number | string | null;
}
interface TextMetrics {
  width: (item: TextItem, text: unknown) => number;
}

function measure(item: TextItem, text: unknown): number {
  const size = item.fontSize === null || item.fontSize === undefined ? 11 : Number(item.fontSize) || 0;
  const w = item.fontWeight;
  const bold = w === 'bold' || w === 'bolder' || (typeof w === 'number' && w >= 600) || (typeof w === 'string' && Number(w) >= 600);
  return textWidth(text === null || text === undefined ? '' : String(text).trim(), size, bold);
}

// vega-scenegraph's text measurer (`textMetrics.width`, which it lets callers replace, as vl-convert
// does; vega's typings do not declare it): swapped in while a chart renders, put back after the
// last render in flight.
export const metrics = (vega as unknown as { textMetrics: TextMetrics }).textMetrics;
let rendering = 0;
let savedWidth: TextMetrics['width'] | null = null;
export function useDejaVuMetrics(on: boolean): void {
  if (on) {
    if (rendering++ === 0) {
      savedWidth = metrics.width;
      metrics.width = measure;
    }
  } else if (--rendering === 0 && savedWidth) {
    metrics.width = savedWidth;
    savedWidth = null;
  }
}
