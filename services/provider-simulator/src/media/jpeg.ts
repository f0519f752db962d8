import type { Rgb } from './png.ts';

/**
 * A minimal baseline JPEG encoder for solid-colour images. Every 8x8 block is uniform, so each block
 * carries only its DC coefficient (all AC coefficients are zero: one end-of-block code). Only the first
 * block of each component has a non-zero DC difference; the rest cost 2 bits each.
 */

// Standard luminance DC Huffman table (ITU T.81 Annex K.3): code lengths 1..16 and symbols.
const DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_VALUES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
// AC table with one symbol: 0x00 (end of block), code "0".
const AC_BITS = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const AC_VALUES = [0x00];

/** Canonical Huffman codes (T.81 Annex C) for a table given as counts per length. */
function canonicalCodes(bits: number[], values: number[]): Map<number, { code: number; length: number }> {
  const codes = new Map<number, { code: number; length: number }>();
  let code = 0;
  let k = 0;
  for (let length = 1; length <= 16; length++) {
    for (let i = 0; i < bits[length - 1]!; i++) {
      codes.set(values[k]!, { code, length });
      k++;
      code++;
    }
    code <<= 1;
  }
  return codes;
}

const DC_CODES = canonicalCodes(DC_BITS, DC_VALUES);
const EOB = canonicalCodes(AC_BITS, AC_VALUES).get(0)!;

class BitWriter {
  private bytes: number[] = [];
  private acc = 0;
  private count = 0;

  write(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      this.count++;
      if (this.count === 8) this.flushByte();
    }
  }

  private flushByte(): void {
    this.bytes.push(this.acc);
    if (this.acc === 0xff) this.bytes.push(0x00); // byte stuffing
    this.acc = 0;
    this.count = 0;
  }

  /** Pads the last byte with 1 bits, as T.81 requires. */
  finish(): Buffer {
    if (this.count > 0) this.write(0xff, 8 - this.count);
    return Buffer.from(this.bytes);
  }
}

function segment(marker: number, payload: number[]): Buffer {
  const len = payload.length + 2;
  return Buffer.from([0xff, marker, len >> 8, len & 0xff, ...payload]);
}

function writeDc(out: BitWriter, diff: number): void {
  const magnitude = Math.abs(diff);
  const category = magnitude === 0 ? 0 : 32 - Math.clz32(magnitude);
  const code = DC_CODES.get(category)!;
  out.write(code.code, code.length);
  if (category > 0) out.write(diff > 0 ? diff : diff + (1 << category) - 1, category);
}

export function encodeSolidJpeg(width: number, height: number, color: Rgb): Buffer {
  const [r, g, b] = color;
  // JFIF YCbCr, level-shifted by 128. With a quantisation table of ones the DC of a uniform block is 8*v.
  const ycc = [
    0.299 * r + 0.587 * g + 0.114 * b,
    128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
    128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
  ].map((v) => Math.round(Math.min(255, Math.max(0, v)) - 128) * 8);

  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const out = new BitWriter();
  for (let i = 0; i < blocks; i++) {
    for (const dc of ycc) {
      writeDc(out, i === 0 ? dc : 0);
      out.write(EOB.code, EOB.length);
    }
  }

  const jfif = [0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0];
  const dqt = [0x00, ...Array.from({ length: 64 }, () => 1)];
  const sof = [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0];
  const dht = [0x00, ...DC_BITS, ...DC_VALUES, 0x10, ...AC_BITS, ...AC_VALUES];
  const sos = [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0];
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, jfif),
    segment(0xdb, dqt),
    segment(0xc0, sof),
    segment(0xc4, dht),
    segment(0xda, sos),
    out.finish(),
    Buffer.from([0xff, 0xd9]),
  ]);
}
