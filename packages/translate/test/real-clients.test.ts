/**
 * Requests as current clients send them (DECISIONS.md, "Real clients"): Claude Code's system turns
 * and new fields on /messages, Codex's namespace and hosted tools, reasoning items and store:false
 * on /responses; hosted tools removed (never refused) and named.
 */
import { describe, expect, it } from 'vitest';
import { createStreamTranslator, prepareRequest, translateRequest, translateResponse, type Dialect, type OutputEvent } from '../src/index.ts';
import { CTX } from './fixtures.ts';

const OPTS = { upstreamModel: 'upstream-model' };
const SCHEMA = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };

/** A Claude Code request: a system turn after the first user turn, adaptive thinking, effort, a deferred tool, a server tool. */
const CLAUDE_CODE = {
  model: 'claude-opus-5-5',
  max_tokens: 32000,
  system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
    { role: 'system', content: [{ type: 'text', text: 'The user switched to plan mode.' }] },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 'sig' }, { type: 'text', text: 'Planning.' }] },
    { role: 'user', content: 'Go on.' },
  ],
  tools: [
    { name: 'Read', description: 'Read a file', input_schema: SCHEMA },
    { name: 'Glob', description: 'Find files', input_schema: SCHEMA, defer_loading: true },
    { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
  ],
  thinking: { type: 'adaptive' },
  output_config: { effort: 'high' },
  context_management: { edits: [{ type: 'clear_thinking_20251015' }] },
  stream: true,
};

describe('/messages as Claude Code sends it', () => {
  it('passes through unchanged to a messages provider: system turns, thinking, effort, deferred and server tools', () => {
    const { body, removedTools } = prepareRequest('messages', 'messages', CLAUDE_CODE, OPTS);
    expect(body).toEqual({ ...CLAUDE_CODE, model: 'upstream-model' });
    expect(removedTools).toEqual([]);
  });

  it('keeps a system turn in place as a system message for chat, never a user turn', () => {
    const { body, removedTools } = prepareRequest('messages', 'chat', CLAUDE_CODE, OPTS);
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are Claude Code.' },
      { role: 'user', content: 'List the files.' },
      { role: 'system', content: 'The user switched to plan mode.' },
      { role: 'assistant', content: 'Planning.' },
      { role: 'user', content: 'Go on.' },
    ]);
    // The deferred tool is an ordinary tool elsewhere; the server tool is removed and named.
    expect((body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(['Read', 'Glob']);
    expect(removedTools).toEqual(['tool_search_tool_regex']);
    for (const field of ['thinking', 'output_config', 'context_management', 'defer_loading']) expect(JSON.stringify(body)).not.toContain(field);
  });

  it('keeps a system turn in place as a developer item for responses', () => {
    const input = translateRequest('messages', 'responses', CLAUDE_CODE, OPTS).input as unknown[];
    expect(input).toEqual([
      { role: 'user', content: 'List the files.' },
      { role: 'developer', content: 'The user switched to plan mode.' },
      { role: 'assistant', content: 'Planning.' },
      { role: 'user', content: 'Go on.' },
    ]);
  });

  it('gives Gemini a system turn as system instruction, in order, and only user and model turns', () => {
    const body = translateRequest('messages', 'gemini', CLAUDE_CODE, OPTS);
    expect(body.systemInstruction).toEqual({ parts: [{ text: 'You are Claude Code.' }, { text: 'The user switched to plan mode.' }] });
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'List the files.' }] },
      { role: 'model', parts: [{ text: 'Planning.' }] },
      { role: 'user', parts: [{ text: 'Go on.' }] },
    ]);
  });

  it('removes a server tool that a tool choice names, with the choice', () => {
    const body = {
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'news?' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }],
      tool_choice: { type: 'tool', name: 'web_search' },
    };
    const out = prepareRequest('messages', 'chat', body, OPTS);
    expect(out.removedTools).toEqual(['web_search']);
    expect(out.body.tools).toBeUndefined();
    expect(out.body.tool_choice).toBeUndefined();
  });
});

/** A Codex request: a namespace of functions, a hosted web search, reasoning items with encrypted content, store:false. */
const CODEX = {
  model: 'gpt-5.5-codex',
  instructions: 'You are Codex.',
  store: false,
  include: ['reasoning.encrypted_content'],
  reasoning: { effort: 'medium', summary: 'auto' },
  prompt_cache_key: 'conv-1',
  input: [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>workspace-write</permissions>' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Start a helper.' }] },
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thinking' }], encrypted_content: 'gAAAA…' },
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'x' } },
    { type: 'function_call', call_id: 'call_1', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '{"message":"hi"}' },
    { type: 'function_call_output', call_id: 'call_1', output: '{"agent_id":"a1"}' },
    { type: 'function_call', call_id: 'call_2', name: 'shell', arguments: '{"command":["ls"]}' },
    { type: 'function_call_output', call_id: 'call_2', output: 'README.md' },
  ],
  tools: [
    { type: 'function', name: 'shell', description: 'Run a command', parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } }, strict: false },
    {
      type: 'namespace',
      name: 'multi_agent_v1',
      description: 'Agents',
      tools: [
        { type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: { message: { type: 'string' } } } },
        { type: 'function', name: 'wait', parameters: { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } } } },
      ],
    },
    { type: 'web_search', external_web_access: false },
  ],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  stream: true,
};

describe('/responses as Codex sends it, to another dialect', () => {
  it.each(['messages', 'chat', 'gemini'] as Dialect[])('→ %s: namespace flattened, web_search removed and named, reasoning dropped', (to) => {
    const { body, removedTools } = prepareRequest('responses', to, CODEX, OPTS);
    expect(removedTools).toEqual(['web_search']);
    const text = JSON.stringify(body);
    expect(text).toContain('multi_agent_v1__spawn_agent');
    expect(text).toContain('multi_agent_v1__wait');
    expect(text).not.toContain('encrypted');
    expect(text).not.toContain('"web_search"');
    expect(text).not.toContain('ws_1');
  });

  it('→ messages: the call history names the flattened function, results follow their calls', () => {
    const body = translateRequest('responses', 'messages', CODEX, OPTS);
    expect(body.system).toEqual(['You are Codex.', '<permissions>workspace-write</permissions>'].map((text) => ({ type: 'text', text })));
    expect(body.messages).toEqual([
      { role: 'user', content: 'Start a helper.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'multi_agent_v1__spawn_agent', input: { message: 'hi' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"agent_id":"a1"}' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_2', name: 'shell', input: { command: ['ls'] } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_2', content: 'README.md' }] },
    ]);
  });

  it('restores the namespace of a call in a whole answer', () => {
    const answer = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'multi_agent_v1__wait', input: { ids: ['a1'] } }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, output_tokens: 5 },
    };
    const out = translateResponse('messages', 'responses', answer, { ...CTX, request: CODEX });
    expect(out.output).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: 'toolu_1', name: 'wait', namespace: 'multi_agent_v1', arguments: '{"ids":["a1"]}' }),
    ]);
  });

  it('restores the namespace of a call in a stream, in the added and done items and the completed response', () => {
    const translator = createStreamTranslator('messages', 'responses', { ...CTX, request: CODEX });
    const upstream = [
      { event: 'message_start', data: { type: 'message_start', message: { id: 'm', usage: { input_tokens: 10, output_tokens: 1 } } } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'multi_agent_v1__spawn_agent', input: {} } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"message":"go"}' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ];
    const out: OutputEvent[] = [];
    for (const event of upstream) out.push(...translator.push(event));
    out.push(...translator.end());
    const items = out.flatMap((e) => {
      const data = e.data as { type: string; item?: unknown; response?: { output: unknown[] } };
      if (data.type === 'response.output_item.added' || data.type === 'response.output_item.done') return [data.item];
      if (data.type === 'response.completed') return data.response!.output;
      return [];
    });
    expect(items).toHaveLength(3);
    for (const item of items) expect(item).toMatchObject({ type: 'function_call', name: 'spawn_agent', namespace: 'multi_agent_v1', call_id: 'toolu_1' });
  });

  it('reads a tool choice naming a namespaced function', () => {
    const body = translateRequest('responses', 'messages', { ...CODEX, tool_choice: { type: 'function', namespace: 'multi_agent_v1', name: 'wait' } }, OPTS);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'multi_agent_v1__wait' });
  });

  it('removes every hosted tool the target cannot run, and is not refused for them', () => {
    const body = { model: 'm', input: 'hi', tools: [{ type: 'file_search', vector_store_ids: ['vs'] }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'mcp', server_label: 'x' }] };
    const out = prepareRequest('responses', 'chat', body, OPTS);
    expect(out.removedTools).toEqual(['file_search', 'code_interpreter', 'mcp']);
    expect(out.body.tools).toBeUndefined();
  });

  it('sends a custom (free-form) tool as a function of one string, and its calls back as custom_tool_call items', () => {
    const grammar = 'start: "*** Begin Patch" /(.|\\n)*/ "*** End Patch"';
    const request = {
      model: 'm',
      input: [
        { role: 'user', content: 'Patch it.' },
        { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done' },
      ],
      tools: [{ type: 'custom', name: 'apply_patch', description: 'Edit files', format: { type: 'grammar', syntax: 'lark', definition: grammar } }],
      tool_choice: { type: 'custom', name: 'apply_patch' },
    };
    const body = translateRequest('responses', 'messages', request, OPTS);
    const [tool] = body.tools as Array<{ name: string; description: string; input_schema: unknown }>;
    expect(tool!.name).toBe('apply_patch');
    expect(tool!.description).toContain(grammar);
    expect(tool!.input_schema).toMatchObject({ properties: { input: { type: 'string' } }, required: ['input'] });
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'apply_patch' });
    expect(body.messages).toEqual([
      { role: 'user', content: 'Patch it.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_p', name: 'apply_patch', input: { input: '*** Begin Patch\n*** End Patch' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_p', content: 'Done' }] },
    ]);

    const answer = { id: 'm1', type: 'message', role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'apply_patch', input: { input: 'PATCH' } }], stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 } };
    const out = translateResponse('messages', 'responses', answer, { ...CTX, request });
    expect(out.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', call_id: 'toolu_9', name: 'apply_patch', input: 'PATCH' })]);

    const translator = createStreamTranslator('messages', 'responses', { ...CTX, request });
    const events = [
      { data: { type: 'message_start', message: { id: 'm', usage: { input_tokens: 1, output_tokens: 1 } } } },
      { data: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_9', name: 'apply_patch', input: {} } } },
      { data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"input":"PA' } } },
      { data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: 'TCH"}' } } },
      { data: { type: 'content_block_stop', index: 0 } },
      { data: { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } } },
      { data: { type: 'message_stop' } },
    ].flatMap((e) => translator.push(e)).map((e) => e.data as { type: string; delta?: string; input?: string; item?: Record<string, unknown> });
    expect(events.some((e) => e.type === 'response.function_call_arguments.delta')).toBe(false);
    expect(events.filter((e) => e.type.startsWith('response.custom_tool_call_input'))).toEqual([
      expect.objectContaining({ type: 'response.custom_tool_call_input.delta', delta: 'PATCH' }),
      expect.objectContaining({ type: 'response.custom_tool_call_input.done', input: 'PATCH' }),
    ]);
    expect(events.find((e) => e.type === 'response.output_item.done')!.item).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: 'PATCH' });
  });
});

describe('hosted tools a same-dialect provider charges for are removed before the call', () => {
  it('responses: web search, file search, code interpreter and image generation go; functions and free hosted tools stay', () => {
    const out = prepareRequest('responses', 'responses', { ...CODEX, include: ['reasoning.encrypted_content', 'web_search_call.action.sources'] }, OPTS);
    expect(out.removedTools).toEqual(['web_search']);
    expect((out.body.tools as Array<{ type: string }>).map((t) => t.type)).toEqual(['function', 'namespace']);
    expect(out.body.include).toEqual(['reasoning.encrypted_content']);
    // Everything else passes through as the client sent it: store:false, reasoning, namespaces.
    expect(out.body).toMatchObject({ store: false, reasoning: CODEX.reasoning, prompt_cache_key: 'conv-1', input: CODEX.input });
    const all = prepareRequest('responses', 'responses', { model: 'm', input: 'hi', tools: ['web_search_preview', 'file_search', 'code_interpreter', 'image_generation', 'computer_use_preview'].map((type) => ({ type })), tool_choice: { type: 'file_search' } }, OPTS);
    expect(all.removedTools).toEqual(['web_search_preview', 'file_search', 'code_interpreter', 'image_generation']);
    expect(all.body.tools).toEqual([{ type: 'computer_use_preview' }]);
    expect(all.body.tool_choice).toBeUndefined();
  });

  it('responses: an allowed_tools choice loses the removed tools', () => {
    const body = { model: 'm', input: 'hi', tools: [{ type: 'web_search' }, { type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'web_search' }, { type: 'function', name: 'f' }] } };
    const out = prepareRequest('responses', 'responses', body, OPTS);
    expect(out.body.tool_choice).toEqual({ type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'f' }] });
  });

  it('chat to another dialect: web_search_options goes too, and is named', () => {
    const out = prepareRequest('chat', 'messages', { model: 'm', messages: [{ role: 'user', content: 'hi' }], web_search_options: {} }, OPTS);
    expect(out.removedTools).toEqual(['web_search_options']);
    expect(JSON.stringify(out.body)).not.toContain('web_search');
  });

  it('chat: web_search_options goes', () => {
    const out = prepareRequest('chat', 'chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }], web_search_options: { search_context_size: 'low' } }, OPTS);
    expect(out.removedTools).toEqual(['web_search_options']);
    expect(out.body.web_search_options).toBeUndefined();
  });

  it('messages: web search and code execution go, with a choice naming them; other server tools stay', () => {
    const body = {
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }, { type: 'code_execution_20250825', name: 'code_execution' }, { type: 'web_fetch_20250910', name: 'web_fetch' }],
      tool_choice: { type: 'tool', name: 'web_search' },
    };
    const out = prepareRequest('messages', 'messages', body, OPTS);
    expect(out.removedTools).toEqual(['web_search', 'code_execution']);
    expect(out.body.tools).toEqual([{ type: 'web_fetch_20250910', name: 'web_fetch' }]);
    expect(out.body.tool_choice).toBeUndefined();
  });

  it('a request without charged tools passes through untouched, unknown fields included', () => {
    const body = { model: 'm', input: 'hi', some_new_field: { a: 1 }, tools: [{ type: 'function', name: 'f' }] };
    const out = prepareRequest('responses', 'responses', body, OPTS);
    expect(out.removedTools).toEqual([]);
    // Untouched but for the model (and the pass-through policy, docs/clients-passthrough.md).
    expect(out.body).toMatchObject({ ...body, model: 'upstream-model' });
  });
});

describe('a translated messages stream reports the input tokens up front when they are known', () => {
  const upstream = [
    { data: { id: 'c', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' } }] } },
    { data: { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } },
    { data: { id: 'c', choices: [], usage: { prompt_tokens: 42, completion_tokens: 3, total_tokens: 45 } } },
    { data: '[DONE]' },
  ];
  const run = (inputTokens?: number) => {
    const translator = createStreamTranslator('chat', 'messages', inputTokens === undefined ? CTX : { ...CTX, inputTokens });
    return upstream.flatMap((e) => translator.push(e)).concat(translator.end()).map((e) => e.data as { type: string; message?: { usage: Record<string, number> }; usage?: Record<string, number> });
  };

  it("message_start carries the provider counter's count; message_delta the final usage", () => {
    const events = run(41);
    expect(events[0]!.message!.usage).toMatchObject({ input_tokens: 41, output_tokens: 0 });
    expect(events.find((e) => e.type === 'message_delta')!.usage).toMatchObject({ input_tokens: 42, output_tokens: 3 });
  });

  it('without a count, message_start says 0 and message_delta still carries the input tokens', () => {
    const events = run();
    expect(events[0]!.message!.usage.input_tokens).toBe(0);
    expect(events.find((e) => e.type === 'message_delta')!.usage!.input_tokens).toBe(42);
  });
});

describe('Claude Code history from a Claude model, continued on another', () => {
  it('drops server-tool calls and results, and tool references of a tool search, keeping the rest', () => {
    const body = {
      model: 'm',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Find the docs.' },
        {
          role: 'assistant',
          content: [
            { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'docs' } },
            { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [{ type: 'web_search_result', url: 'https://example.com', title: 'Docs', encrypted_content: 'x' }] },
            { type: 'text', text: 'Found them.' },
            { type: 'tool_use', id: 'toolu_1', name: 'tool_search', input: { query: 'glob' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'tool_reference', tool_name: 'Glob' }, { type: 'text', text: 'loaded' }] }] },
      ],
    };
    expect(translateRequest('messages', 'chat', body, OPTS).messages).toEqual([
      { role: 'user', content: 'Find the docs.' },
      { role: 'assistant', content: 'Found them.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'tool_search', arguments: '{"query":"glob"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'loaded' },
    ]);
  });
});
