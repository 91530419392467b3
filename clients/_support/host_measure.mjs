/**
 * What an agent host put in front of its model that the harness cannot derive from what it keeps
 * (ES module, no dependencies; used by host_driver.mjs, contract in docs/adapters.md `model_view`):
 *  - {@link reach}: for a result with a payload longer than the harness keeps whole, how much of it
 *    reached the model, compared with the result the reference server sent, and the host's words;
 *  - {@link schemaShown}: whether a model request showed the model a tool's advertised outputSchema.
 *
 * @module host_measure
 */

/** The longest string the harness keeps whole (servers/reference/elide.py `MAX_STRING`): longer payloads are measured here. */
const MAX_STRING = 4096;

/** How many characters of a payload's start (and end) the driver looks for in what the model read. */
const PROBE_CHARS = 64;

/** Keys whose strings tag or name a part of a tool result rather than carry what the model reads. */
const NOT_CONTENT = new Set(['type', 'id', 'call_id', 'tool_use_id', 'tool_call_id', 'mimeType', 'mime_type', 'name']);

/** Every content string in `value` (not the tags and ids of {@link NOT_CONTENT}). */
function contentStrings(value, out = []) {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => contentStrings(v, out));
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) if (!NOT_CONTENT.has(key)) contentStrings(v, out);
  }
  return out;
}

/** The payload of each content block (its text, data, resource text or blob) longer than {@link MAX_STRING}. */
function longPayloads(result) {
  const blocks = Array.isArray(result?.content) ? result.content : [];
  return blocks.flatMap((block, index) => {
    const payload = block?.text ?? block?.data ?? block?.resource?.text ?? block?.resource?.blob;
    return typeof payload === 'string' && payload.length > MAX_STRING ? [{ index, type: String(block.type), payload }] : [];
  });
}

/** How many characters of `a` from `i` equal those of `b` from its start (`step` at a time, then one by one). */
function matchForward(a, i, b) {
  let n = 0;
  for (const step of [65536, 1024, 1]) {
    while (n + step <= b.length && i + n + step <= a.length && a.startsWith(b.slice(n, n + step), i + n)) n += step;
  }
  return n;
}

/** How many characters of `a` ending at `end` equal the end of `b`. */
function matchBackward(a, end, b) {
  let n = 0;
  for (const step of [65536, 1024, 1]) {
    while (n + step <= b.length && end - n - step >= 0 && a.endsWith(b.slice(b.length - n - step, b.length - n), end - n)) n += step;
  }
  return n;
}

/**
 * The spans of `text` that are `payload`'s start or end: where the payload's first (last)
 * {@link PROBE_CHARS} characters first (last) occur, extended as far as they match.
 * @returns {{head: number, tail: number, spans: Array<[number, number]>}}
 */
function payloadSpans(text, payload) {
  const spans = [];
  let head = 0;
  let tail = 0;
  const start = text.indexOf(payload.slice(0, PROBE_CHARS));
  if (start >= 0) {
    head = matchForward(text, start, payload);
    spans.push([start, start + head]);
  }
  const last = text.lastIndexOf(payload.slice(-PROBE_CHARS));
  if (last >= 0) {
    const end = last + Math.min(PROBE_CHARS, payload.length);
    tail = matchBackward(text, end, payload);
    spans.push([end - tail, end]);
  }
  return { head, tail, spans };
}

/** The characters of `text` outside `spans`, each gap trimmed, joined by ' … '. */
function outside(text, spans) {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  const parts = [];
  let at = 0;
  for (const [from, to] of sorted) {
    if (from > at) parts.push(text.slice(at, from));
    at = Math.max(at, to);
  }
  parts.push(text.slice(at));
  return parts.map((p) => p.trim()).filter(Boolean).join(' … ');
}

/** Characters covered by `spans` (overlaps counted once). */
function covered(spans) {
  let total = 0;
  let at = -1;
  for (const [from, to] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (to > Math.max(from, at)) total += to - Math.max(from, at);
    at = Math.max(at, to);
  }
  return total;
}

/** How much of each long payload of `sent` reached the model in `value`, and the host's own words; null when `sent` has none. */
export function reach(value, sent) {
  const payloads = longPayloads(sent);
  if (payloads.length === 0) return null;
  const texts = contentStrings(value);
  const spansByText = texts.map(() => []);
  const measured = payloads.map(({ index, type, payload }) => {
    let best = { head: 0, tail: 0, kept: 0 };
    texts.forEach((text, t) => {
      const { head, tail, spans } = payloadSpans(text, payload);
      spansByText[t].push(...spans);
      const kept = Math.min(covered(spans), payload.length);
      if (kept > best.kept) best = { head, tail, kept };
    });
    return { block: index, type, chars: payload.length, ...best };
  });
  const words = texts.map((text, t) => outside(text, spansByText[t])).filter(Boolean).join('\n');
  return { payloads: measured, words: words.length > 2000 ? `${words.slice(0, 1999)}…` : words };
}

/** The property names anywhere in a JSON Schema. */
function propertyNames(schema, out = new Set()) {
  if (Array.isArray(schema)) schema.forEach((s) => propertyNames(s, out));
  else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'properties' && value && typeof value === 'object') Object.keys(value).forEach((k) => out.add(k));
      propertyNames(value, out);
    }
  }
  return out;
}

/**
 * Whether the model request `body` showed the model `tool`'s outputSchema, as the server listed it
 * (`tools/list` in the reference server's journal): every property name of the outputSchema that
 * its inputSchema lacks appears in the request as a whole word. Null when the server advertised no
 * outputSchema for the tool, or the schema names no property of its own (nothing to look for).
 */
export function schemaShown(body, journal, tool) {
  const listed = journal
    .filter((e) => e.event === 'send' && Array.isArray(e.message?.result?.tools))
    .flatMap((e) => e.message.result.tools)
    .find((t) => t?.name === tool);
  if (!listed?.outputSchema) return null;
  const own = propertyNames(listed.inputSchema);
  const names = [...propertyNames(listed.outputSchema)].filter((n) => !own.has(n));
  if (names.length === 0) return null;
  const text = JSON.stringify(body);
  return names.every((n) => new RegExp(`(^|[^A-Za-z0-9_])${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9_])`).test(text));
}
