export type {
  CallOptions,
  GeneratedImage,
  ImageBytes,
  ImageEditRequest,
  ImageMimeType,
  ImageRequest,
  ProviderAdapter,
  ProviderConfig,
  ProviderKind,
  SseEvent,
  TokenUsage,
  TextDialect,
  TextResult,
  Timeouts,
  VideoDownload,
  VideoRequest,
  VideoStatus,
} from './types.ts';
export { DEFAULT_TIMEOUTS } from './types.ts';
export {
  ProviderError,
  errorFromStatus,
  errorFromStreamEvent,
  isProviderError,
  malformed,
  parseRetryAfter,
  sanitize,
  upstreamMessage,
} from './errors.ts';
export { ProviderConfigError, ProviderRegistry, createAdapter, parseProviderConfigs } from './registry.ts';
export { textAnswerFromStream, textAnswerWhole } from './answer-assembly.ts';
export { FallbackRouter, orderRoutes } from './routing.ts';
export type { Route, RouterOptions } from './routing.ts';
export { DEFAULT_HEALTH_POLICY, LocalRouteHealth, RouteHealthBoard, closedStatus, routeKey } from './route-health.ts';
export type { AttemptOutcome, BreakerState, HealthPolicy, OpenReason, RouteHealth, RouteRef, RouteStatus, Sample, Verdict, WindowStats } from './route-health.ts';
export { fetchProviderImage, isAllowedImageUrl } from './image-fetch.ts';
export type { ImageFetchOptions } from './image-fetch.ts';
