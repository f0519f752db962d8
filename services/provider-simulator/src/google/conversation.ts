import type { Conversation, OutputFormat, ToolChoice } from '../engine.ts';
import { asArray, asObject, isObject } from '../json.ts';
import { countTokens } from '../tokens.ts';
import type { JsonObject } from '../types.ts';

function partsText(content: JsonObject): string {
  return asArray(content.parts)
    .map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : ''))
    .filter((t) => t !== '')
    .join('\n');
}

function geminiToolChoice(body: JsonObject): ToolChoice {
  const config = asObject(asObject(body.toolConfig).functionCallingConfig);
  const mode = typeof config.mode === 'string' ? config.mode.toUpperCase() : 'AUTO';
  if (mode === 'NONE') return { mode: 'none' };
  if (mode === 'ANY') {
    const allowed = asArray(config.allowedFunctionNames);
    return typeof allowed[0] === 'string' ? { mode: 'required', name: allowed[0] } : { mode: 'required' };
  }
  return { mode: 'auto' };
}

export function geminiConversation(body: JsonObject): Conversation {
  const contents = asArray(body.contents).map(asObject);
  const last = contents.at(-1);
  const lastUser = contents.findLast((c) => c.role === 'user' || c.role === undefined);
  const responses = last ? asArray(last.parts).map(asObject).filter((p) => isObject(p.functionResponse)) : [];
  const tools = asArray(body.tools).flatMap((t) => {
    const tool = asObject(t);
    return asArray(tool.functionDeclarations ?? tool.function_declarations).flatMap((d) => {
      const decl = asObject(d);
      return typeof decl.name === 'string' ? [{ name: decl.name, schema: decl.parameters ?? decl.parametersJsonSchema }] : [];
    });
  });
  return {
    lastUserText: lastUser ? partsText(lastUser) : '',
    toolResult:
      responses.length > 0
        ? responses.map((p) => JSON.stringify(asObject(p.functionResponse).response ?? {})).join(' ')
        : undefined,
    tools,
    toolChoice: geminiToolChoice(body),
    format: geminiFormat(asObject(body.generationConfig)),
    reasoning: asObject(asObject(body.generationConfig).thinkingConfig).includeThoughts === true,
  };
}

/** JSON output: `responseMimeType: application/json`, with `responseJsonSchema` or `responseSchema` when given. */
function geminiFormat(config: JsonObject): OutputFormat | undefined {
  if (config.responseMimeType !== 'application/json') return undefined;
  const schema = config.responseJsonSchema ?? config.responseSchema;
  return schema === undefined ? { kind: 'json_object' } : { kind: 'json_schema', schema };
}

/** Prompt tokens of a GenerateContentRequest, shared by usageMetadata and :countTokens. */
export function geminiPromptTokens(body: JsonObject): number {
  return countTokens({ systemInstruction: body.systemInstruction, contents: body.contents, tools: body.tools });
}

/** The first inline image of the last user turn (an edit's source), as base64 data. */
export function lastUserInlineImage(body: JsonObject): string | undefined {
  const lastUser = asArray(body.contents).map(asObject).findLast((c) => c.role === 'user' || c.role === undefined);
  for (const part of asArray(lastUser?.parts)) {
    const inline = asObject(asObject(part).inlineData ?? asObject(part).inline_data);
    if (typeof inline.data === 'string' && String(inline.mimeType ?? inline.mime_type).startsWith('image/')) return inline.data;
  }
  return undefined;
}
