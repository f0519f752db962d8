import { isRecord, pick, recordField, recordsField, stringField } from '../json.ts';
import type { JsonRecord } from '../json.ts';

/**
 * Rewrites a chat-completions body into the responses shape that `POST /responses/input_tokens`
 * counts (`messages` → `input`, tools flattened), keeping everything that costs input tokens.
 */
export function chatAsInputTokensBody(body: JsonRecord): JsonRecord {
  const out: JsonRecord = { model: body['model'], input: (recordsField(body, 'messages') ?? []).flatMap(inputItems) };
  const tools = recordsField(body, 'tools');
  if (tools !== undefined) out['tools'] = tools.map(tool);
  if (body['tool_choice'] !== undefined) out['tool_choice'] = toolChoice(body['tool_choice']);
  if (body['parallel_tool_calls'] !== undefined) out['parallel_tool_calls'] = body['parallel_tool_calls'];
  const format = textFormat(recordField(body, 'response_format'));
  if (format !== undefined) out['text'] = { format };
  const effort = stringField(body, 'reasoning_effort');
  if (effort !== undefined) out['reasoning'] = { effort };
  return out;
}

/** Chat content parts → responses input parts; parts with no responses form (audio) are dropped. */
const PART_CONVERTERS: Record<string, (part: JsonRecord) => JsonRecord | undefined> = {
  text: (part) => ({ type: 'input_text', text: stringField(part, 'text') ?? '' }),
  image_url: (part) => {
    const image = recordField(part, 'image_url');
    const url = image === undefined ? undefined : stringField(image, 'url');
    if (url === undefined) return undefined;
    return { type: 'input_image', image_url: url, detail: stringField(image!, 'detail') ?? 'auto' };
  },
  file: (part) => {
    const file = recordField(part, 'file');
    return file === undefined ? undefined : { type: 'input_file', ...pick(file, ['file_id', 'file_data', 'filename']) };
  },
};

function inputContent(content: unknown): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter(isRecord).flatMap((part) => {
    const converted = PART_CONVERTERS[stringField(part, 'type') ?? '']?.(part);
    return converted === undefined ? [] : [converted];
  });
}

/** The text of a content that should be plain text (assistant turns, tool results). */
function plainText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isRecord)
    .map((part) => stringField(part, 'text') ?? stringField(part, 'refusal') ?? '')
    .join('');
}

function inputItems(message: JsonRecord): JsonRecord[] {
  const role = stringField(message, 'role');
  switch (role) {
    case 'system':
    case 'developer':
    case 'user':
      return [{ role, content: inputContent(message['content']) }];
    case 'assistant': {
      const text = plainText(message['content']);
      const items: JsonRecord[] = text === '' ? [] : [{ role: 'assistant', content: text }];
      for (const call of recordsField(message, 'tool_calls') ?? []) {
        const fn = recordField(call, 'function') ?? {};
        items.push({
          type: 'function_call',
          call_id: stringField(call, 'id') ?? '',
          name: stringField(fn, 'name') ?? '',
          arguments: stringField(fn, 'arguments') ?? '',
        });
      }
      return items;
    }
    case 'tool':
      return [
        {
          type: 'function_call_output',
          call_id: stringField(message, 'tool_call_id') ?? '',
          output: plainText(message['content']),
        },
      ];
    default:
      // The deprecated `function` role has no responses form.
      return [];
  }
}

/** `{type:'function', function:{…}}` → `{type:'function', …}`; other tool kinds likewise unwrapped. */
function tool(chatTool: JsonRecord): JsonRecord {
  const type = stringField(chatTool, 'type') ?? 'function';
  const inner = recordField(chatTool, type);
  return inner === undefined ? chatTool : { type, ...inner };
}

function toolChoice(choice: unknown): unknown {
  if (!isRecord(choice) || stringField(choice, 'type') !== 'function') return choice;
  return { type: 'function', name: stringField(recordField(choice, 'function') ?? {}, 'name') };
}

function textFormat(format: JsonRecord | undefined): JsonRecord | undefined {
  switch (format === undefined ? undefined : stringField(format, 'type')) {
    case 'json_schema':
      return { type: 'json_schema', ...recordField(format!, 'json_schema') };
    case 'json_object':
      return { type: 'json_object' };
    default:
      return undefined;
  }
}
