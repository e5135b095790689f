/** Device nodes as the drivers name them: `/dev/<prefix><N>`. */

/** `davinci3` → 3 for prefix `davinci`; null when `name` is not one of the prefix's nodes. */
export function deviceNodeIndex(name: string, prefix: string): number | null {
  const match = new RegExp(`^${prefix}(\\d{1,4})$`).exec(name);
  return match ? Number(match[1]) : null;
}
