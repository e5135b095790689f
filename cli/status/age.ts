/**
 * How old a document is, and when it is stale (older than --stale-after). A person looking
 * at a stale document still wants to see it, so it is shown with a warning; a script that
 * must not act on one asks for --fail-stale.
 */
import type { PublishedDocument } from '../../contracts/index.js';

/** `1.2 s`, `42 s`, `3 min`, `2 h`; a time in the future (clock skew) is `0 s`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** The document's age in milliseconds at `now`. */
export function documentAge(document: PublishedDocument, now: number): number {
  return now - Date.parse(document.timestamp);
}

/** True when the document is older than `staleAfterMs`. */
export function isStale(document: PublishedDocument, now: number, staleAfterMs: number): boolean {
  return documentAge(document, now) > staleAfterMs;
}

/** The stderr warning for a stale document. */
export function staleWarning(document: PublishedDocument, now: number, staleAfterMs: number): string {
  return (
    `warning: the status is stale: written ${formatAge(documentAge(document, now))} ago ` +
    `(over ${formatAge(staleAfterMs)}) by ${document.publisher.identity}; is a controller running and leading?`
  );
}
