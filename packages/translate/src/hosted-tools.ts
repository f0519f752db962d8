/**
 * Hosted tools: tools the provider runs on its own servers (web search, file search, code
 * execution…), as opposed to function tools the client runs. Two rules (docs/hosted-tools.md):
 *
 * - A provider of another dialect cannot run them: they are removed from a translated request
 *   (the dialect codecs do it while parsing), never refused.
 * - A hosted tool the provider charges for per call costs the gateway money that its token prices
 *   do not cover, and the catalog has no per-call price: it is removed before the call even when
 *   the request passes through to a provider of its own dialect.
 *
 * Either way the removed tools are reported, and the gateway names them to the client in the
 * `x-gateway-removed-tools` response header.
 */
import type { Dialect } from './ir.ts';
import { arr, isRecord, rec, str, type Json } from './json.ts';

/** The response header that names the removed tools, comma-separated. */
export const REMOVED_TOOLS_HEADER = 'x-gateway-removed-tools';

/** OpenAI responses tool types charged per call or per session beyond tokens (web search, file search, containers, images). */
function chargedResponsesTool(type: string): boolean {
  return type.startsWith('web_search') || type === 'file_search' || type === 'code_interpreter' || type === 'image_generation';
}

/** Anthropic server tools charged beyond tokens: web search (per search), code execution (container time). */
function chargedMessagesTool(type: string): boolean {
  return type.startsWith('web_search_') || type.startsWith('code_execution_');
}

/** The name a removed tool is reported by: a messages server tool's `name`, else its `type`. */
export function hostedToolLabel(dialect: Dialect, tool: Json): string {
  return (dialect === 'messages' ? str(tool.name) : undefined) ?? str(tool.type) ?? 'unknown';
}

/** The `include` entries that ask for a removed tool's output (`web_search_call.action.sources`…). */
function includeFor(removedTypes: string[]): (entry: unknown) => boolean {
  const families = removedTypes.map((t) => `${t.startsWith('web_search') ? 'web_search' : t}_call`);
  return (entry) => typeof entry === 'string' && families.includes(entry.split('.')[0] ?? '');
}

/**
 * `body` (a copy the caller owns) for a provider of its own dialect, without the hosted tools that
 * provider would charge for per call; a `tool_choice` naming one of them goes with it. Returns the
 * labels of what was removed.
 */
export function removeChargedTools(dialect: Dialect, body: Json): string[] {
  if (dialect === 'chat') {
    // Chat's search models search with `web_search_options`, charged per call.
    if (body.web_search_options === undefined) return [];
    delete body.web_search_options;
    return ['web_search_options'];
  }
  if ((dialect !== 'responses' && dialect !== 'messages') || !Array.isArray(body.tools)) return [];
  const charged = dialect === 'responses' ? chargedResponsesTool : chargedMessagesTool;
  const removed: Json[] = [];
  const kept = body.tools.filter((raw) => {
    const type = isRecord(raw) ? str(raw.type) : undefined;
    if (type === undefined || !charged(type)) return true;
    removed.push(raw as Json);
    return false;
  });
  if (removed.length === 0) return [];
  const labels = removed.map((tool) => hostedToolLabel(dialect, tool));
  if (kept.length > 0) body.tools = kept;
  else delete body.tools;
  const choice = rec(body.tool_choice);
  if (dialect === 'responses') {
    const types = removed.map((tool) => String(tool.type));
    if (typeof choice.type === 'string' && types.includes(choice.type)) delete body.tool_choice;
    if (choice.type === 'allowed_tools') {
      const allowed = arr(choice.tools).filter((t) => !types.includes(String(rec(t).type)));
      if (allowed.length === 0) delete body.tool_choice;
      else body.tool_choice = { ...choice, tools: allowed };
    }
    if (Array.isArray(body.include)) {
      const asksRemoved = includeFor(types);
      body.include = body.include.filter((entry) => !asksRemoved(entry));
    }
  } else if (choice.type === 'tool' && labels.includes(String(choice.name))) delete body.tool_choice;
  if (body.tools === undefined) delete body.tool_choice;
  return labels;
}
