import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, ToolMessage, type AIMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { generateText, Output, stepCountIs, streamText, tool as aiTool, type LanguageModel } from 'ai';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { QUOTES_RESULT, startClientSystem, WEATHER_PROMPT, WEATHER_RESULT, type ClientSystem } from './support.ts';

/**
 * Real clients, unchanged but for base URL, key and model name, against the whole system with the
 * simulator upstream: plain text, streaming, a tool loop, structured output and usage, natively
 * and across protocols (Anthropic clients to OpenAI and Google models; OpenAI chat and Responses
 * clients to Claude). The settings used here are those of docs/client-guide.md.
 */
const Weather = z.object({ city: z.string(), temperature_c: z.number(), summary: z.string() });
const weatherParams = z.object({ city: z.string() });
const getWeather = async () => WEATHER_RESULT;

/** Models of every provider dialect, by the name a client would use (some are aliases). */
const OPENAI_MODEL = 'gpt-sim-mini';
const CLAUDE_MODEL = 'team-claude'; // an alias of claude-sim-sonnet
const GEMINI_MODEL = 'gemini-sim-flash';

let gw: ClientSystem;
let openaiSdk: OpenAI;
let anthropicSdk: Anthropic;
beforeAll(async () => {
  gw = await startClientSystem();
  openaiSdk = new OpenAI({ baseURL: gw.baseUrl, apiKey: gw.apiKey, maxRetries: 0 });
  // Our keys are bearer tokens: `authToken`, not `apiKey` (which travels as x-api-key).
  anthropicSdk = new Anthropic({ baseURL: gw.origin, authToken: gw.apiKey, apiKey: null, maxRetries: 0 });
}, 180_000);
afterAll(() => gw?.system.stop());

describe('openai SDK helpers (chat completions and Responses)', () => {

  describe.each([
    ['native', OPENAI_MODEL],
    ['to Claude', CLAUDE_MODEL],
  ])('chat completions, %s (%s)', (_direction, model) => {
    it('text, and usage', async () => {
      const res = await openaiSdk.chat.completions.create({ model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello.' }] });
      expect(res.choices[0]!.message.content).toMatch(/\S/);
      expect(res.usage!.prompt_tokens).toBeGreaterThan(0);
      expect(res.usage!.completion_tokens).toBeGreaterThan(0);
    });

    it('streaming (chat.completions.stream) with the usage chunk', async () => {
      const stream = openaiSdk.chat.completions.stream({ model, messages: [{ role: 'user', content: 'Tell me a story.' }], stream_options: { include_usage: true } });
      let deltas = 0;
      stream.on('content', () => deltas++);
      const final = await stream.finalChatCompletion();
      expect(deltas).toBeGreaterThan(1);
      expect(final.choices[0]!.message.content).toMatch(/\S/);
      expect(final.usage!.prompt_tokens).toBeGreaterThan(0);
    });

    it('a tool loop (runTools)', async () => {
      const runner = openaiSdk.chat.completions.runTools({
        model,
        messages: [{ role: 'user', content: WEATHER_PROMPT }],
        tools: [zodFunction({ name: 'get_weather', parameters: weatherParams, function: getWeather })],
      });
      const calls: string[] = [];
      runner.on('functionToolCall', (c) => calls.push(c.name));
      expect(await runner.finalContent()).toMatch(QUOTES_RESULT);
      expect(calls).toEqual(['get_weather']);
    });

    it('structured output (chat.completions.parse with zodResponseFormat)', async () => {
      const res = await openaiSdk.chat.completions.parse({ model, messages: [{ role: 'user', content: 'Weather in Hanoi as JSON.' }], response_format: zodResponseFormat(Weather, 'weather') });
      expect(Weather.parse(res.choices[0]!.message.parsed)).toBeTruthy();
    });
  });

  describe.each([
    ['native', OPENAI_MODEL],
    ['to Claude', CLAUDE_MODEL],
  ])('Responses, %s (%s)', (_direction, model) => {
    it('text, and usage', async () => {
      const res = await openaiSdk.responses.create({ model, instructions: 'Be brief.', input: 'Say hello.' });
      expect(res.output_text).toMatch(/\S/);
      expect(res.usage!.input_tokens).toBeGreaterThan(0);
      expect(res.usage!.output_tokens).toBeGreaterThan(0);
    });

    it('streaming (responses.stream)', async () => {
      const stream = openaiSdk.responses.stream({ model, input: 'Tell me a story.' });
      let deltas = 0;
      stream.on('response.output_text.delta', () => deltas++);
      const final = await stream.finalResponse();
      expect(deltas).toBeGreaterThan(1);
      expect(final.output_text).toMatch(/\S/);
      expect(final.usage!.output_tokens).toBeGreaterThan(0);
    });

    it('a tool loop (function_call, then function_call_output)', async () => {
      const tools: OpenAI.Responses.Tool[] = [
        { type: 'function', name: 'get_weather', description: 'Weather of a city', strict: true, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
      ];
      const first = await openaiSdk.responses.create({ model, input: WEATHER_PROMPT, tools });
      const call = first.output.find((o) => o.type === 'function_call');
      expect(call).toMatchObject({ type: 'function_call', name: 'get_weather' });
      expect(JSON.parse(call!.arguments)).toHaveProperty('city');
      const second = await openaiSdk.responses.create({
        model,
        tools,
        input: [{ role: 'user', content: WEATHER_PROMPT }, ...first.output, { type: 'function_call_output', call_id: call!.call_id, output: WEATHER_RESULT }] as OpenAI.Responses.ResponseInput,
      });
      expect(second.output_text).toMatch(QUOTES_RESULT);
    });

    it('structured output (responses.parse with zodTextFormat)', async () => {
      const res = await openaiSdk.responses.parse({ model, input: 'Weather in Hanoi as JSON.', text: { format: zodTextFormat(Weather, 'weather') } });
      expect(Weather.parse(res.output_parsed)).toBeTruthy();
    });
  });
});

describe('@anthropic-ai/sdk helpers', () => {

  describe.each([
    ['native', CLAUDE_MODEL],
    ['to OpenAI', OPENAI_MODEL],
    ['to Google', GEMINI_MODEL],
  ])('%s (%s)', (_direction, model) => {
    it('text, and usage', async () => {
      const msg = await anthropicSdk.messages.create({ model, max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello.' }] });
      expect(msg.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/\S/) });
      expect(msg.usage.input_tokens).toBeGreaterThan(0);
      expect(msg.usage.output_tokens).toBeGreaterThan(0);
    });

    it('streaming (messages.stream), with the input tokens in message_start', async () => {
      const stream = anthropicSdk.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Tell me a story.' }] });
      let startInput = -1;
      let deltas = 0;
      stream.on('streamEvent', (e) => {
        if (e.type === 'message_start') startInput = e.message.usage.input_tokens;
      });
      stream.on('text', () => deltas++);
      const final = await stream.finalMessage();
      expect(deltas).toBeGreaterThan(1);
      expect(final.usage.output_tokens).toBeGreaterThan(0);
      expect(final.usage.input_tokens).toBeGreaterThan(0);
      // Clients (LangChain's ChatAnthropic among them) take the input count from message_start.
      expect(startInput).toBeGreaterThan(0);
    });

    it('a tool loop (beta.messages.toolRunner)', async () => {
      const runner = anthropicSdk.beta.messages.toolRunner({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: WEATHER_PROMPT }],
        tools: [betaZodTool({ name: 'get_weather', description: 'Weather of a city', inputSchema: weatherParams, run: getWeather })],
        max_iterations: 4,
      });
      const final = await runner;
      const text = final.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      expect(text).toMatch(QUOTES_RESULT);
    });

    it('structured output (messages.parse with zodOutputFormat)', async () => {
      const msg = await anthropicSdk.messages.parse({ model, max_tokens: 512, messages: [{ role: 'user', content: 'Weather in Hanoi as JSON.' }], output_config: { format: zodOutputFormat(Weather) } });
      expect(Weather.parse(msg.parsed_output)).toBeTruthy();
    });
  });
});

describe('the AI SDK (ai, @ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/openai-compatible)', () => {
  const models: Array<[string, () => LanguageModel]> = [
    ['@ai-sdk/openai Responses, native', () => createOpenAI({ baseURL: gw.baseUrl, apiKey: gw.apiKey })(OPENAI_MODEL)],
    ['@ai-sdk/openai Responses, to Claude', () => createOpenAI({ baseURL: gw.baseUrl, apiKey: gw.apiKey })(CLAUDE_MODEL)],
    ['@ai-sdk/openai chat, to Claude', () => createOpenAI({ baseURL: gw.baseUrl, apiKey: gw.apiKey }).chat(CLAUDE_MODEL)],
    ['@ai-sdk/anthropic, native', () => createAnthropic({ baseURL: `${gw.origin}/v1`, authToken: gw.apiKey })(CLAUDE_MODEL)],
    ['@ai-sdk/anthropic, to OpenAI', () => createAnthropic({ baseURL: `${gw.origin}/v1`, authToken: gw.apiKey })(OPENAI_MODEL)],
    ['@ai-sdk/anthropic, to Google', () => createAnthropic({ baseURL: `${gw.origin}/v1`, authToken: gw.apiKey })(GEMINI_MODEL)],
    ['@ai-sdk/openai-compatible, to Google', () => createOpenAICompatible({ name: 'gateway', baseURL: gw.baseUrl, apiKey: gw.apiKey, includeUsage: true, supportsStructuredOutputs: true })(GEMINI_MODEL)],
  ];

  describe.each(models)('%s', (_name, model) => {
    it('generateText, and usage', async () => {
      const res = await generateText({ model: model(), system: 'Be brief.', prompt: 'Say hello.', maxRetries: 0 });
      expect(res.text).toMatch(/\S/);
      expect(res.usage.inputTokens).toBeGreaterThan(0);
      expect(res.usage.outputTokens).toBeGreaterThan(0);
    });

    it('streamText', async () => {
      const res = streamText({ model: model(), prompt: 'Tell me a story.', maxRetries: 0 });
      let parts = 0;
      for await (const part of res.textStream) if (part.length > 0) parts++;
      expect(parts).toBeGreaterThan(1);
      expect((await res.usage).outputTokens).toBeGreaterThan(0);
    });

    it('a tool loop (tools with execute, stopWhen)', async () => {
      const res = await generateText({
        model: model(),
        prompt: WEATHER_PROMPT,
        tools: { get_weather: aiTool({ description: 'Weather of a city', inputSchema: weatherParams, execute: getWeather }) },
        stopWhen: stepCountIs(4),
        maxRetries: 0,
      });
      expect(res.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName))).toEqual(['get_weather']);
      expect(res.text).toMatch(QUOTES_RESULT);
      expect(res.totalUsage.inputTokens).toBeGreaterThan(0);
    });

    it('structured output (Output.object)', async () => {
      const res = await generateText({ model: model(), prompt: 'Weather in Hanoi as JSON.', output: Output.object({ schema: Weather }), maxRetries: 0 });
      expect(Weather.parse(res.output)).toBeTruthy();
    });
  });
});

describe('a key sent as x-api-key (the default of the AI SDK\'s Anthropic provider and of older Anthropic SDKs)', () => {
  it('@ai-sdk/anthropic with apiKey: 401 whose message names authToken', async () => {
    const model = createAnthropic({ baseURL: `${gw.origin}/v1`, apiKey: gw.apiKey })(CLAUDE_MODEL);
    const err = (await generateText({ model, prompt: 'Say hello.', maxRetries: 0 }).catch((e: unknown) => e)) as { statusCode: number; responseBody: string };
    expect(err.statusCode).toBe(401);
    expect(JSON.parse(err.responseBody)).toMatchObject({ error: { code: 'auth_missing_or_malformed', message: expect.stringContaining('`authToken` instead of `apiKey`') } });
  });

  it('@anthropic-ai/sdk 1.x sends even its apiKey as a bearer token, so both settings work', async () => {
    const sdk = new Anthropic({ baseURL: gw.origin, apiKey: gw.apiKey, maxRetries: 0 });
    const msg = await sdk.messages.create({ model: CLAUDE_MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'x' }] });
    expect(msg.content[0]).toMatchObject({ type: 'text' });
  });
});

describe('LangChain JS (@langchain/openai, @langchain/anthropic)', () => {
  const models: Array<[string, () => ChatOpenAI | ChatAnthropic]> = [
    ['ChatOpenAI, native', () => new ChatOpenAI({ model: OPENAI_MODEL, apiKey: gw.apiKey, configuration: { baseURL: gw.baseUrl }, maxRetries: 0 })],
    ['ChatOpenAI, to Claude', () => new ChatOpenAI({ model: CLAUDE_MODEL, apiKey: gw.apiKey, configuration: { baseURL: gw.baseUrl }, maxRetries: 0 })],
    ['ChatOpenAI Responses, to Claude', () => new ChatOpenAI({ model: CLAUDE_MODEL, apiKey: gw.apiKey, configuration: { baseURL: gw.baseUrl }, useResponsesApi: true, maxRetries: 0 })],
    ['ChatAnthropic, native', () => new ChatAnthropic({ model: CLAUDE_MODEL, apiKey: gw.apiKey, anthropicApiUrl: gw.origin, clientOptions: { authToken: gw.apiKey }, maxRetries: 0 })],
    ['ChatAnthropic, to OpenAI', () => new ChatAnthropic({ model: OPENAI_MODEL, apiKey: gw.apiKey, anthropicApiUrl: gw.origin, clientOptions: { authToken: gw.apiKey }, maxRetries: 0 })],
    ['ChatAnthropic, to Google', () => new ChatAnthropic({ model: GEMINI_MODEL, apiKey: gw.apiKey, anthropicApiUrl: gw.origin, clientOptions: { authToken: gw.apiKey }, maxRetries: 0 })],
  ];

  describe.each(models)('%s', (_name, model) => {
    it('invoke, and usage_metadata', async () => {
      const res = await model().invoke('Say hello.');
      expect(res.text).toMatch(/\S/);
      expect(res.usage_metadata!.input_tokens).toBeGreaterThan(0);
      expect(res.usage_metadata!.output_tokens).toBeGreaterThan(0);
    });

    it('stream, with usage on the chunks', async () => {
      let text = '';
      let parts = 0;
      let input = 0;
      let output = 0;
      for await (const chunk of await model().stream('Tell me a story.')) {
        if (chunk.text.length > 0) parts++;
        text += chunk.text;
        input += chunk.usage_metadata?.input_tokens ?? 0;
        output += chunk.usage_metadata?.output_tokens ?? 0;
      }
      expect(parts).toBeGreaterThan(1);
      expect(text).toMatch(/\S/);
      expect(input).toBeGreaterThan(0);
      expect(output).toBeGreaterThan(0);
    });

    it('a tool loop (bindTools, ToolMessage)', async () => {
      const weather = langchainTool(getWeather, { name: 'get_weather', description: 'Weather of a city', schema: weatherParams });
      const bound = model().bindTools([weather]);
      const messages: Array<HumanMessage | AIMessage | ToolMessage> = [new HumanMessage(WEATHER_PROMPT)];
      const first = await bound.invoke(messages);
      expect(first.tool_calls?.map((c) => c.name)).toEqual(['get_weather']);
      messages.push(first);
      for (const call of first.tool_calls ?? []) messages.push(new ToolMessage({ tool_call_id: call.id!, content: await getWeather() }));
      const second = await bound.invoke(messages);
      expect(second.text).toMatch(QUOTES_RESULT);
    });

    it('structured output (withStructuredOutput)', async () => {
      const res = await model().withStructuredOutput(Weather, { name: 'weather' }).invoke('Weather in Hanoi as JSON.');
      expect(Weather.parse(res)).toBeTruthy();
    });
  });
});

describe('@openai/agents (Responses API)', () => {
  beforeAll(() => {
    setDefaultOpenAIClient(new OpenAI({ baseURL: gw.baseUrl, apiKey: gw.apiKey, maxRetries: 0 }));
    setTracingDisabled(true); // traces would go to OpenAI's platform
  });

  describe.each([
    ['native', OPENAI_MODEL],
    ['to Claude', CLAUDE_MODEL],
  ])('%s (%s)', (_direction, model) => {
    it('run: text, and usage', async () => {
      const result = await run(new Agent({ name: 'greeter', instructions: 'Be brief.', model }), 'Say hello.');
      expect(result.finalOutput).toMatch(/\S/);
      expect(result.state.usage.inputTokens).toBeGreaterThan(0);
      expect(result.state.usage.outputTokens).toBeGreaterThan(0);
    });

    it('run with stream: true', async () => {
      const result = await run(new Agent({ name: 'teller', model }), 'Tell me a story.', { stream: true });
      let text = '';
      for await (const part of result.toTextStream()) text += part;
      await result.completed;
      expect(text).toMatch(/\S/);
      expect(result.finalOutput).toBe(text);
    });

    it('a tool loop (function tool)', async () => {
      const calls: string[] = [];
      const weather = agentTool({
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: weatherParams,
        execute: async () => {
          calls.push('get_weather');
          return getWeather();
        },
      });
      const result = await run(new Agent({ name: 'forecaster', model, tools: [weather] }), WEATHER_PROMPT);
      expect(calls).toEqual(['get_weather']);
      expect(result.finalOutput).toMatch(QUOTES_RESULT);
    });

    it('structured output (outputType)', async () => {
      const result = await run(new Agent({ name: 'reporter', model, outputType: Weather }), 'Weather in Hanoi as JSON.');
      expect(Weather.parse(result.finalOutput)).toBeTruthy();
    });
  });
});
