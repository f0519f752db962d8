import { crc32, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { sniffImageType } from '@gw/image-types';
import { decodeImageInput, MAX_IMAGE_BASE64_CHARS, MAX_IMAGE_BYTES } from '../src/generation/image-input.ts';
import { refusal } from './support/refusal.ts';

/** A real 1x1 greyscale PNG: signature, IHDR, IDAT, IEND, with their CRCs. */
const PNG = png1x1();
/** JPEG start: SOI, then an APP0/JFIF segment. */
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01]);
/** WebP start: RIFF container, WEBP form, a VP8L chunk. */
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([26, 0, 0, 0]), Buffer.from('WEBPVP8L'), Buffer.from([13, 0, 0, 0, 0x2f, 0, 0, 0, 0])]);

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

function png1x1(): Buffer {
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(Buffer.from([0, 0x80]))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('sniffImageType', () => {
  it.each([
    ['image/png', PNG],
    ['image/jpeg', JPEG],
    ['image/webp', WEBP],
  ])('recognises %s by its magic bytes', (mime, bytes) => {
    expect(sniffImageType(bytes)).toBe(mime);
  });

  it.each([
    ['empty', Buffer.alloc(0)],
    ['text', Buffer.from('hello, this is not an image')],
    ['GIF', Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00', 'latin1')],
    ['PNG signature without IHDR', Buffer.concat([PNG.subarray(0, 8), Buffer.from('\x00\x00\x00\x0dJUNK\x00\x00\x00\x00', 'latin1')])],
    ['RIFF that is not WEBP', Buffer.concat([Buffer.from('RIFF\x00\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(8)])],
    ['truncated JPEG', Buffer.from([0xff, 0xd8])],
  ])('refuses %s', (_name, bytes) => {
    expect(sniffImageType(bytes)).toBeUndefined();
  });
});

describe('decodeImageInput (spec 2.4)', () => {
  it.each([
    ['image/png', PNG],
    ['image/jpeg', JPEG],
    ['image/webp', WEBP],
  ] as const)('decodes %s from b64_json + mime_type and from a data URL', (mime, bytes) => {
    const fromB64 = decodeImageInput({ b64_json: bytes.toString('base64'), mime_type: mime }, 'image');
    expect(fromB64.mimeType).toBe(mime);
    expect(fromB64.bytes.equals(bytes)).toBe(true);
    const fromUrl = decodeImageInput({ data_url: `data:${mime};base64,${bytes.toString('base64')}` }, 'image');
    expect(fromUrl).toEqual(fromB64);
  });

  it('accepts an upper-case data URL type and an agreeing mime_type beside it', () => {
    expect(decodeImageInput({ data_url: `data:IMAGE/PNG;base64,${PNG.toString('base64')}`, mime_type: 'image/png' }, 'image').mimeType).toBe('image/png');
  });

  it.each([
    ['not an object', 'abc', /image must be an object/],
    ['an array', [PNG.toString('base64')], /image must be an object/],
    ['no data', { mime_type: 'image/png' }, /needs b64_json \(with mime_type\) or data_url/],
    ['both forms', { b64_json: PNG.toString('base64'), mime_type: 'image/png', data_url: `data:image/png;base64,${PNG.toString('base64')}` }, /not both/],
    ['b64_json without mime_type', { b64_json: PNG.toString('base64') }, /mime_type is required with b64_json/],
    ['an unsupported mime_type', { b64_json: PNG.toString('base64'), mime_type: 'image/gif' }, /mime_type must be image\/png, image\/jpeg or image\/webp/],
    ['b64_json not a string', { b64_json: 42, mime_type: 'image/png' }, /b64_json must be a base64 string/],
    ['a data URL of another type', { data_url: `data:image/gif;base64,${PNG.toString('base64')}` }, /data_url must be of type/],
    ['a data URL that is not base64', { data_url: 'data:image/png,rawbytes' }, /data_url must have the form/],
    ['a mime_type contradicting the data URL', { data_url: `data:image/png;base64,${PNG.toString('base64')}`, mime_type: 'image/jpeg' }, /contradicts/],
    ['empty base64', { b64_json: '', mime_type: 'image/png' }, /image is empty/],
    ['base64 with line breaks', { b64_json: `${PNG.toString('base64').slice(0, 20)}\n${PNG.toString('base64').slice(20)}`, mime_type: 'image/png' }, /not standard base64/],
    ['base64url', { b64_json: PNG.toString('base64url').replace(/=/g, '') + '-_', mime_type: 'image/png' }, /not standard base64/],
    ['bytes that are no image', { b64_json: Buffer.from('just some text, honest').toString('base64'), mime_type: 'image/png' }, /not a PNG, JPEG or WebP image/],
    ['a JPEG declared as PNG', { b64_json: JPEG.toString('base64'), mime_type: 'image/png' }, /is a image\/jpeg image but is declared as image\/png/],
    ['a PNG in a WebP data URL', { data_url: `data:image/webp;base64,${PNG.toString('base64')}` }, /declared as image\/webp/],
  ])('refuses %s with invalid_request', (_name, input, message) => {
    const err = refusal(() => decodeImageInput(input, 'image'));
    expect(err.code).toBe('invalid_request');
    expect(err.message).toMatch(message);
  });

  it('accepts exactly 8 MB decoded and refuses one byte more, judged before decoding', () => {
    const atLimit = Buffer.alloc(MAX_IMAGE_BYTES, 0);
    PNG.copy(atLimit);
    const b64 = atLimit.toString('base64');
    expect(b64.length).toBe(MAX_IMAGE_BASE64_CHARS);
    expect(decodeImageInput({ b64_json: b64, mime_type: 'image/png' }, 'image').bytes.length).toBe(MAX_IMAGE_BYTES);
    const over = Buffer.concat([atLimit, Buffer.alloc(1)]).toString('base64');
    expect(refusal(() => decodeImageInput({ b64_json: over, mime_type: 'image/png' }, 'image')).message).toMatch(/larger than 8 MB \(8388608 bytes\)/);
  });

  it('names the field it was given', () => {
    expect(refusal(() => decodeImageInput(null, 'last_frame')).message).toMatch(/^last_frame /);
  });
});
