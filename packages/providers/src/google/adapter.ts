import { createContext, unsupported } from '../provider-context.ts';
import type { ProviderAdapter, ProviderConfig, TextDialect } from '../types.ts';
import { googleAuthHeaders } from './api.ts';
import { countTokens } from './count-tokens.ts';
import { generateContent } from './generate-content.ts';
import { editImage, generateImages } from './images.ts';
import { listModels } from './models.ts';
import { cancelVideo, createVideo, downloadVideo, getVideo } from './videos.ts';

/** Gemini API: generateContent (text and images), token counting, the model list and Veo videos. */
export function createGoogleAdapter(config: ProviderConfig, imageHosts: readonly string[]): ProviderAdapter {
  const ctx = createContext(config, googleAuthHeaders(config.apiKey));
  return {
    name: config.name,
    kind: 'google',
    textDialects: ['gemini'] satisfies TextDialect[],
    imageHosts,
    listModels: (opts) => listModels(ctx, opts),
    text: async (dialect, body, opts) => {
      if (dialect !== 'gemini') throw unsupported(ctx, `${dialect} bodies`);
      return generateContent(ctx, body, opts);
    },
    countTokens: (dialect, body, opts) => countTokens(ctx, dialect, body, opts),
    generateImages: (req, opts) => generateImages(ctx, req, opts),
    editImage: (req, opts) => editImage(ctx, req, opts),
    createVideo: (req, opts) => createVideo(ctx, req, opts),
    getVideo: (name, opts) => getVideo(ctx, name, opts),
    cancelVideo: (name, opts) => cancelVideo(ctx, name, opts),
    downloadVideo: (name, contentRef, range, opts) => downloadVideo(ctx, name, contentRef, range, opts),
    close: () => ctx.http.close(),
  };
}
