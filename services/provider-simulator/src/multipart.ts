/**
 * A small multipart/form-data parser for the few endpoints that take uploads (OpenAI image edits and
 * Sora video creation). Bodies are already size-bounded and buffered by fastify, so a single pass over
 * the buffer is enough.
 */
export interface MultipartFile {
  filename: string;
  contentType: string;
  data: Buffer;
}

export class MultipartForm {
  private readonly fields = new Map<string, Array<string | MultipartFile>>();

  add(name: string, value: string | MultipartFile): void {
    const list = this.fields.get(name);
    if (list) list.push(value);
    else this.fields.set(name, [value]);
  }

  /** The first text value of a field. */
  text(name: string): string | undefined {
    const found = this.fields.get(name)?.find((v) => typeof v === 'string');
    return typeof found === 'string' ? found : undefined;
  }

  files(name: string): MultipartFile[] {
    return (this.fields.get(name) ?? []).filter((v): v is MultipartFile => typeof v !== 'string');
  }

  /** Log-friendly form: text fields as is, files summarised (never their bytes). */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [name, values] of this.fields) {
      const shown = values.map((v) =>
        typeof v === 'string' ? v : { filename: v.filename, content_type: v.contentType, bytes: v.data.length },
      );
      out[name] = shown.length === 1 ? shown[0] : shown;
    }
    return out;
  }
}

export class MultipartError extends Error {
  readonly statusCode = 400;
}

function boundaryOf(contentType: string): string {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw new MultipartError('multipart/form-data request without a boundary');
  return boundary;
}

function headerParam(header: string, name: string): string | undefined {
  const m = new RegExp(`;\\s*${name}="([^"]*)"`, 'i').exec(header) ?? new RegExp(`;\\s*${name}=([^;\\s]+)`, 'i').exec(header);
  return m?.[1];
}

export function parseMultipart(body: Buffer, contentType: string): MultipartForm {
  const delimiter = Buffer.from(`--${boundaryOf(contentType)}`);
  const form = new MultipartForm();
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new MultipartError('multipart body does not contain its boundary');
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // closing "--"
    pos += 2; // CRLF after the delimiter
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw new MultipartError('malformed multipart part headers');
    const headers = body.toString('utf8', pos, headerEnd).split('\r\n');
    const next = body.indexOf(delimiter, headerEnd + 4);
    if (next < 0) throw new MultipartError('multipart body is truncated');
    const data = body.subarray(headerEnd + 4, next - 2); // part content ends with CRLF before the delimiter
    const disposition = headers.find((h) => /^content-disposition:/i.test(h)) ?? '';
    const name = headerParam(disposition, 'name');
    if (name !== undefined) {
      const filename = headerParam(disposition, 'filename');
      if (filename === undefined) {
        form.add(name, data.toString('utf8'));
      } else {
        const type = headers.find((h) => /^content-type:/i.test(h))?.split(':')[1]?.trim() ?? 'application/octet-stream';
        form.add(name, { filename, contentType: type, data });
      }
    }
    pos = next;
  }
  return form;
}
