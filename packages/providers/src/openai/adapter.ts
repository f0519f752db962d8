import { createContext, unsupported } from '../provider-context.ts';
import type { ProviderAdapter, ProviderConfig, TextDialect } from '../types.ts';
import { openAiAuthHeaders } from './api.ts';
import { chatCompletions } from './chat-completions.ts';
import { countTokens } from './count-tokens.ts';
import { editImage } from './image-edits.ts';
import { generateImages } from './images.ts';
import { listModels } from './models.ts';
import { responses } from './responses.ts';
import { cancelVideo, createVideo, downloadVideo, getVideo } from './videos.ts';

/** OpenAI: chat completions and responses, token counting, images (generate, edit) and Sora videos. */
export function createOpenAiAdapter(config: ProviderConfig, imageHosts: readonly string[]): ProviderAdapter {
  const ctx = createContext(config, openAiAuthHeaders(config.apiKey));
  return {
    name: config.name,
    kind: 'openai',
    textDialects: ['chat', 'responses'] satisfies TextDialect[],
    imageHosts,
    listModels: (opts) => listModels(ctx, opts),
    text: async (dialect, body, opts) => {
      if (dialect === 'chat') return chatCompletions(ctx, body, opts);
      if (dialect === 'responses') return responses(ctx, body, opts);
      throw unsupported(ctx, `${dialect} bodies`);
    },
    countTokens: (dialect, body, opts) => countTokens(ctx, dialect, body, opts),
    generateImages: (req, opts) => generateImages(ctx, req, opts),
    editImage: (req, opts) => editImage(ctx, req, opts),
    createVideo: (req, opts) => createVideo(ctx, req, opts),
    getVideo: (id, opts) => getVideo(ctx, id, opts),
    cancelVideo: (id, opts) => cancelVideo(ctx, id, opts),
    downloadVideo: (id, _contentRef, range, opts) => downloadVideo(ctx, id, range, opts),
    close: () => ctx.http.close(),
  };
}
