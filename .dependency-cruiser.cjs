// The boundaries of the house (docs/architecture.md), checked on every import: `pnpm check:boundaries`.
// A rule names what it keeps apart and why; a new exception belongs here with its reason, not in the code.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No import cycles, type-only ones included: a cycle makes the load order matter and hides which module depends on which. ' +
        'Types a module and its users both need go to a third module (e.g. a service\'s deps.ts).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'service-imports-another-service',
      severity: 'error',
      comment: 'A service never imports another service\'s source: services share only packages/ and the generated contracts (and talk over gRPC or the bus).',
      from: { path: '^services/([^/]+)/src/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'package-imports-a-service',
      severity: 'error',
      comment: 'packages/ never import from services/: a library does not know who uses it.',
      from: { path: '^packages/[^/]+/src/' },
      to: { path: '^services/' },
    },
    {
      name: 'test-imports-another-service',
      severity: 'error',
      comment:
        'The tests beside a package or service may run the provider simulator in-process (it stands in for the providers); ' +
        'no other service\'s source. (The whole-system tests and benches under test/ are outside these rules.)',
      from: { path: '^(services|packages)/([^/]+)/test/' },
      to: { path: '^services/', pathNot: ['^services/$2/', '^services/provider-simulator/'] },
    },
    {
      name: 'package-internals',
      severity: 'error',
      comment: 'Code outside a package uses it through its entry (`@gw/<name>`, src/index.ts), never a file inside it.',
      from: { path: '^(services|packages)/([^/]+)/' },
      to: { path: '^packages/', pathNot: ['^packages/$2/', '^packages/[^/]+/src/index\\.ts$'] },
    },
    {
      name: 'public-http-only-at-the-edge',
      severity: 'error',
      comment:
        'Only edge-gateway serves the public generation protocols over HTTP; console serves the dashboard, the provider simulator ' +
        'stands in for providers. Every other service speaks gRPC and the bus only.',
      from: { path: '^(services|packages)/', pathNot: '^services/(edge-gateway|console|provider-simulator)/' },
      to: { path: '(^|/)node_modules/(fastify|@fastify/[^/]+)/' },
    },
    {
      name: 'public-dialects-at-the-edge-and-text',
      severity: 'error',
      comment:
        'The wire dialects (@gw/translate) are read by the edge (validating and estimating client requests) and by text (translating to ' +
        'the upstream\'s dialect and back); no other service handles a public request body.',
      from: { path: '^(services|packages)/', pathNot: ['^services/(edge-gateway|text)/', '^packages/translate/'] },
      to: { path: '^packages/translate/' },
    },
    {
      name: 'providers-only-through-adapters',
      severity: 'error',
      comment:
        'Only the provider adapters (packages/providers) speak to providers: the HTTP client (undici) and the providers\' SDKs are theirs. ' +
        'Tests may use the official SDKs as clients of the gateway.',
      from: { path: '^(services|packages)/[^/]+/src/', pathNot: '^packages/providers/' },
      to: { path: '(^|/)node_modules/(undici|openai|@anthropic-ai/sdk|@google/genai)/' },
    },
    {
      name: 'no-providers-at-the-edge',
      severity: 'error',
      comment: 'The edge, console and billing never call a provider: the edge hands work to text, media and video-jobs.',
      from: { path: '^services/(edge-gateway|console|billing)/' },
      to: { path: '^packages/providers/' },
    },
    {
      name: 'bus-through-service-kit',
      severity: 'error',
      comment:
        'Events go through the one bus package (service-kit: outbox, durable consumers, broadcasts): services do not import the NATS ' +
        'client. Exception: text\'s route health, which shares its evidence in a JetStream key-value bucket (src/health/).',
      from: { path: '^services/[^/]+/src/', pathNot: '^services/text/src/health/' },
      to: { path: '(^|/)node_modules/@nats-io/' },
    },
    {
      name: 'translation-is-pure',
      severity: 'error',
      comment: 'Dialect translation is pure (no I/O, clock or randomness) and stands alone: it imports no Node module, npm package or other package.',
      from: { path: '^packages/translate/src/' },
      to: {
        pathNot: '^packages/translate/src/',
      },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing (a typo, a missing dependency).',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // node_modules are not followed but kept as leaves: the rules about fastify, undici and SDKs look at them.
    exclude: { path: '(^|/)dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
